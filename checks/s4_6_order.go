package checks

var section4_6 = []*Rule{}
