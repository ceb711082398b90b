package checks

var section4_2 = []*Rule{}
