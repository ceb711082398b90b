package checks

var section7 = []*Rule{}
