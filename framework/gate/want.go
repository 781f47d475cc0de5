package gate

// wantField says what a missing key of a gate fixture must hold.
func wantField(key string) string {
	switch key {
	case "target":
		return "want the target's name, e.g. local"
	case "rules":
		return "want a list of rules, each with metric, match and maxIncreasePct or maxDecreasePct"
	case "metric":
		return "want the gated metric, e.g. sidecarCPUPer1kReq"
	case "match":
		return `want the labels of the scenarios it gates, e.g. {path: one-hop, c: "8"}, or {} for every scenario`
	}
	return "want a value"
}
