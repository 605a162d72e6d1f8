package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Stdout, os.Stderr))
}

// run checks the repository holding the working directory and prints every
// broken rule.
func run(stdout, stderr io.Writer) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "archcheck:", err)
		return 2
	}
	root, err := moduleRoot(wd)
	if err != nil {
		fmt.Fprintln(stderr, "archcheck:", err)
		return 2
	}
	violations, err := checkAll(root)
	if err != nil {
		fmt.Fprintln(stderr, "archcheck:", err)
		return 2
	}
	for _, v := range violations {
		fmt.Fprintln(stdout, v)
	}
	if len(violations) > 0 {
		return 1
	}
	fmt.Fprintln(stdout, "archcheck: every rule holds")
	return 0
}

// checkAll runs every rule over the module at root.
func checkAll(root string) ([]string, error) {
	g, err := loadGraph(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range layerRules(g.module) {
		out = append(out, r.check(g)...)
	}
	files, err := goFiles(root)
	if err != nil {
		return nil, err
	}
	long, err := longFunctions(root, files, maxFunctionLines)
	if err != nil {
		return nil, err
	}
	for _, f := range long {
		out = append(out, f.String())
	}
	return out, nil
}

// errNoModule: no go.mod above the directory.
var errNoModule = errors.New("no go.mod in the directory or above it")
