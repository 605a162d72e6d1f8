package main

import "errors"

// Filled in as the projections and operations land.
type rebuildCmd struct {
	Names      []string `arg:"" optional:"" help:"Projections to rebuild."`
	All        bool     `help:"Rebuild every projection."`
	VerifyOnly bool     `name:"verify-only" help:"Report differences, do not swap."`
}
type verifyCmd struct{}

var errNotYet = errors.New("not implemented yet")

func (rebuildCmd) Run(*globals) error { return errNotYet }
func (verifyCmd) Run(*globals) error  { return errNotYet }
