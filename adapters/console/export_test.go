package console

// EncodeCursorForTest encodes a list cursor as the console hands them out
// (the benchmark starts from a deep page).
func EncodeCursorForTest(key any) string { return encodeCursor(key) }
