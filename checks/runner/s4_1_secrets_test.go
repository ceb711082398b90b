package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/wire"

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
		got := secretsIn(c.in)
		assert.Check(t, (len(got) > 0) == c.want, "secretsIn(%q) = %v; want a hit: %v", c.in, got, c.want)
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

// A provider prefix or a private key is a strong hit; entropy alone is weak,
// and a prefixed key is not counted again as a random-looking run.
func TestSecretStrength(t *testing.T) {
	for _, c := range []struct {
		in     string
		strong []bool
	}{
		{"Signs requests; see spec rev 9c1185a5c5e9fc54612808977ee8f548b2258d31.", []bool{false}},
		{"wJa9rXUt7FEMI/K7MDENG/bPxRfiCYEx4mP1eK3y", []bool{false}},
		{"key=sk-live-Fx7Q2mZk9LpW4rT8vB1nC6yD3hJ5sA0e", []bool{true}},
		{"AKIAIOSFODNN7EXAMPLE and q8Lm3Xv9Tr2Wp7Ks4Nd6Hj1Fb5Gc0YeRtU", []bool{true, false}},
		{"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----", []bool{true}},
	} {
		var got []bool
		for _, h := range secretsIn(c.in) {
			got = append(got, h.strong)
		}
		assert.DeepEqual(t, got, c.strong)
	}
}

func TestDescribeSecretsSplitsTheTwoRules(t *testing.T) {
	doc := map[string]any{
		"agent": map[string]any{"summary": "Debug: q8Lm3Xv9Tr2Wp7Ks4Nd6Hj1Fb5Gc0YeRtU"},
		"credentials": []any{
			map[string]any{"env": "A_KEY", "purpose": "see spec rev 9c1185a5c5e9fc54612808977ee8f548b2258d31"},
			map[string]any{"env": "B_KEY", "purpose": "key sk-live-Fx7Q2mZk9LpW4rT8vB1nC6yD3hJ5sA0e",
				"value": "Zq8Lm3Xv9Tr2Wp7Ks4Nd6Hj1Fb5Gc0YeRtUiOpA"},
			"ghp_16C7e42F292c6912E7710c838347Ae178B4a",
		},
	}
	var got []string
	for _, f := range describeSecrets(doc) {
		got = append(got, f.at+" "+map[bool]string{true: "value", false: "elsewhere"}[f.credentialValue])
	}
	assert.DeepEqual(t, got, []string{
		"/credentials/0/purpose elsewhere",
		"/credentials/1/purpose value",
		"/credentials/1/value value",
		"/credentials/2 value",
		"/agent/summary elsewhere",
	})
}

func TestDescribeSecretsKeepsMemberNamesOutOfPaths(t *testing.T) {
	doc := map[string]any{"credentials": []any{map[string]any{"env": "A_KEY", "sk-live-Fx7Q2mZk9LpW4rT8vB1nC6yD3hJ5sA0e": true}}}
	for _, f := range describeSecrets(doc) {
		assert.Check(t, !strings.Contains(f.at, "Fx7Q2m"), "path %q repeats the secret", f.at)
	}
}

// The evidence never repeats a value, however the body spells it.
func TestRedactedCopyBlotsEveryForm(t *testing.T) {
	secret := "wJa9rXUt7FEMI/K7MDENG/bPxRfiCYEx4mP1eK3y"
	for _, body := range []string{
		`{"a": "` + secret + `"}`,
		`{"a": "key: ` + strings.ReplaceAll(secret, "/", `\/`) + `"}`,
		`{"a": "\u0077` + secret[1:] + `"}`,
		`{"` + secret + `": 1}`,
	} {
		ex := &wire.Exchange{Body: []byte(body)}
		c := redactedCopy(ex, []string{secret})
		v, err := c.JSON()
		assert.NilError(t, err, "%s", c.Body)
		raw, _ := json.Marshal(v)
		assert.Check(t, !strings.Contains(string(c.Body), "wJa9rX") && !strings.Contains(string(raw), secret), "%s leaks: %s", body, c.Body)
		assert.Equal(t, string(ex.Body), body, "the original exchange is left alone")
	}
}
