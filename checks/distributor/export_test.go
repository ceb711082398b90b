package distributor

import "net/url"

// Structured is structured, for the tests.
var Structured = structured

// LoopbackNeed says why the rule on both buckets cannot run against base,
// or "".
func LoopbackNeed(base *url.URL) string { return needLoopback.Check(&Env{Base: base}) }
