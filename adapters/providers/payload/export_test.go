package payload

// ObjectMap exposes o's decoded members to the tests.
func ObjectMap(o Object) map[string]any { return o.m }
