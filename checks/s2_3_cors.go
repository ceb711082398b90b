package checks

var section2_3 = []*Rule{}
