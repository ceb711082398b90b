package distributor

// Structured is structured, for the tests.
var Structured = structured
