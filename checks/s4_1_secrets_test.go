package checks

import (
	"testing"

	"gotest.tools/v3/assert"
)

// Every value here is made up; none is a live credential.
func TestSecretIn(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		// Provider prefixes.
		{"sk-proj-4FqXh2Lm9TzR8wPk1VbN6cYd3JsE7aGu", true},
		{"sk-ant-api03-Zx8Qw2Er4Ty6Ui8Op0AsDfGhJk", true},
		{"sk_live_51FixtureExampleNotReal0000", true},
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"ghp_16C7e42F292c6912E7710c838347Ae178B4a", true},
		{"github_pat_11FIXTURE0example0NotReal0abcdefg", true},
		{"xoxb-0000-FixtureExampleNotReal1", true},
		{"AIzaSyFIXTURE0example1Key2notReal3abcd", true},
		{"glpat-FIXTURExample1234abcd", true},
		{"hf_FixtureExampleTokenNotRealAbCdEfGhIj", true},
		{"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.c2ln", true},
		// Inside prose and URLs.
		{"Calls the model. Key: sk-proj-4FqXh2Lm9TzR8wPk1VbN6cYd3JsE7aGu (keep it safe).", true},
		{"https://keys.example.test/signup?key=AIzaSyFIXTURE0example1Key2notReal3abcd", true},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", true},
		// No prefix, high entropy.
		{"wJa9rXUt7FEMI/K7MDENG/bPxRfiCYEx4mP1eK3y", true},
		{"q8Lm+3Xv9Tr2/Wp7Ks4Nd6Hj1Fb5Gc0Ye==", true},
		{"Zq8Lm3Xv9Tr2Wp7Ks4Nd6Hj1Fb5Gc0YeRtUiOpA", true},
		{"token=4f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f", true},
		// A URL hides only tokens without a provider prefix.
		{"https://keys.example.test/new?key=sk-proj-4FqXh2Lm9TzR8wPk1VbN6cYd3JsE7aGu", true},
		{"Get one at https://x.example/signup; key: 4f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f", true},

		// Environment variable names.
		{"OPENAI_API_KEY", false},
		{"FIXTURE_MODEL_KEY", false},
		{"AZURE_OPENAI_API_KEY_FOR_PRODUCTION_DEPLOYMENT_2024", false},
		// URLs.
		{"https://platform.openai.com/api-keys", false},
		{"https://github.com/settings/personal-access-tokens/new", false},
		{"https://example.com/agents/acme/market-research-crew/v1/2024/docs", false},
		{"https://keys.example.test/signup", false},
		{"https://x.example/?ref=3f9a7c2e4b1d8f6a0c5e9b2d7f4a1c8e", false},
		{"https://huggingface.co/acme/tiny-model/resolve/3f9a7c2e4b1d8f6a0c5e9b2d7f4a1c8e3b6d9f0a/config.json", false},
		{"Sign up at HTTPS://x.example/join?invite=Zq8Lm3Xv9Tr2Wp7Ks4Nd6Hj1Fb5Gc0YeRtUiOpA today.", false},
		{"http://x.example/?ref=wJa9rXUt7FEMI/K7MDENG/bPxRfiCYEx4mP1eK3y", false},
		// Prose and identifiers.
		{"Runs the agents in this crew.", false},
		{"Searches the web for sources; uses sk-learn-is-not-a-package-name-at-all.", false},
		{"hf_hub_download_timeout_seconds", false},
		{"The prefix AKIA marks an AWS access key.", false},
		{"camelCaseIdentifierThatIsVeryLongIndeed", false},
		{"camelCaseIdentifierThatIsVeryLongIndeed2024", false},
		{"fetchCompanyFinancialStatements2024Quarterly", false},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", false},
		{"## Positioning brief\n\nThe mid-market segment wants fewer dashboards.", false},
		{"550e8400-e29b-41d4-a716-446655440000", false},
		{"acme/market-research-crew", false},
		{"2026-11-29T08:00:00Z", false},
		{"v2024.11.29-build.1234567890", false},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1111", false},
		{"image/png", false},
		{"", false},
	} {
		got, ok := secretIn(c.in)
		assert.Check(t, ok == c.want, "secretIn(%q) = %q, %v; want %v", c.in, got, ok, c.want)
	}
}

func TestWalkStringsVisitsKeysAndValues(t *testing.T) {
	var seen []string
	walkStrings(map[string]any{"a/b": []any{"x", map[string]any{"k": "y"}}, "n": 1.0}, "", func(at, s string) {
		seen = append(seen, at+"="+s)
	})
	assert.DeepEqual(t, seen, []string{
		"/a~1b (a member name)=a/b", "/a~1b/0=x", "/a~1b/1/k (a member name)=k", "/a~1b/1/k=y", "/n (a member name)=n",
	})
}

func TestRedactSecretKeepsLittle(t *testing.T) {
	assert.Equal(t, redactSecret("sk-proj-4FqXh2Lm9TzR8wPk1VbN6cYd3JsE7aGu"), `"sk-pro"… (40 characters)`)
	assert.Equal(t, redactSecret("short"), `"short"`)
}
