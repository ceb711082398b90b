package checks

var section2_3Media = []*Rule{}
