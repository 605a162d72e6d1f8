package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// maxFunctionLines is the longest a hand-written function may be, from its
// func keyword to its closing brace.
const maxFunctionLines = 120

// longFunction is a function (or function literal) over the limit.
type longFunction struct {
	File  string // relative to the module root, slash-separated
	Line  int    // of the func keyword
	Name  string // Recv.Method, Func, or Func.funcN for the Nth literal in Func
	Lines int
}

func (f longFunction) String() string {
	return fmt.Sprintf("no function over %d lines: %s:%d: %s is %d lines", maxFunctionLines, f.File, f.Line, f.Name, f.Lines)
}

// goFiles lists the module's .go files that git tracks (every .go file
// below root, hidden directories aside, when git cannot tell), relative
// to root, without the generated *.gen.go.
func goFiles(root string) ([]string, error) {
	files, err := trackedGoFiles(root)
	if err != nil {
		if files, err = walkGoFiles(root); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".gen.go") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil
}

func trackedGoFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.go")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var files []string
	for f := range bytes.SplitSeq(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}

func walkGoFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// longFunctions parses files (relative to root) and returns their functions
// over limit lines, in file and line order.
func longFunctions(root string, files []string, limit int) ([]longFunction, error) {
	var out []longFunction
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		long, err := longFunctionsIn(f, src, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, long...)
	}
	return out, nil
}

// longFunctionsIn returns the functions of one source file over limit
// lines; none if the file says it is generated.
func longFunctionsIn(name string, src []byte, limit int) ([]longFunction, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(file) {
		return nil, nil
	}
	var out []longFunction
	measure := func(n ast.Node, fname string) {
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		if lines := end.Line - start.Line + 1; lines > limit {
			out = append(out, longFunction{File: name, Line: start.Line, Name: fname, Lines: lines})
		}
	}
	for _, decl := range file.Decls {
		outer := declName(decl)
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
			measure(fd, outer)
		}
		lits := 0
		ast.Inspect(decl, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				lits++
				measure(lit, fmt.Sprintf("%s.func%d", outer, lits))
			}
			return true
		})
	}
	return out, nil
}

// declName names a declaration the way a reader looks for it: Func,
// Recv.Method, or the first name a var declaration gives.
func declName(decl ast.Decl) string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			return d.Name.Name
		}
		return recvName(d.Recv.List[0].Type) + "." + d.Name.Name
	case *ast.GenDecl:
		for _, s := range d.Specs {
			if v, ok := s.(*ast.ValueSpec); ok && len(v.Names) > 0 {
				return v.Names[0].Name
			}
			if t, ok := s.(*ast.TypeSpec); ok {
				return t.Name.Name
			}
		}
	}
	return "(declaration)"
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
