package delivery

// AddReferences adds the merchant's ids to e.References, the empty ones
// and those it has already left out.
func (e *Event) AddReferences(ids ...string) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		known := false
		for _, r := range e.References {
			known = known || r == id
		}
		if !known {
			e.References = append(e.References, id)
		}
	}
}
