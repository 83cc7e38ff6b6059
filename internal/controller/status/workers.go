package status

// Workers is a controller's number of concurrent reconciles from its configured value: 1 when
// unset or below 1 (as in tests that build a configuration by hand).
func Workers(configured *int32) int {
	if configured == nil || *configured < 1 {
		return 1
	}
	return int(*configured)
}
