package checks

var section5 = []*Rule{}
