package admission

// ReadingConnections is how many connections have begun a request that is
// not yet in a handler (connTable.reading): the tests wait for it.
func (c *Controller) ReadingConnections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns.reading.Len()
}
