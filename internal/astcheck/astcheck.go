// Package astcheck reads Go source to check, in tests, that code which
// must handle every value of an enumeration does: every op kind of
// package schedule has a case in the runner's executor and in the
// predictor's pricer, so that a new kind fails a test rather than a run.
package astcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
)

// Constants returns the names of the constants of type typ declared in
// file, in order, leaving out unexported ones (counters such as
// numOpKinds).
func Constants(file, typ string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		inBlock := false // an iota block: later specs repeat the first's type
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok {
				inBlock = id.Name == typ
			} else if v.Type != nil || len(v.Values) > 0 {
				inBlock = false
			}
			if !inBlock {
				continue
			}
			for _, n := range v.Names {
				if n.IsExported() {
					out = append(out, n.Name)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no constants of type %s", file, typ)
	}
	return out, nil
}

// CaseSelectors returns the names sel.X that the case clauses of the
// switch statements in function fn of file name (as pkg.X), sorted.
func CaseSelectors(file, fn, pkg string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	found := false
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		found = true
		ast.Inspect(fd, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if s, ok := e.(*ast.SelectorExpr); ok {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == pkg && !slices.Contains(out, s.Sel.Name) {
						out = append(out, s.Sel.Name)
					}
				}
			}
			return true
		})
	}
	if !found {
		return nil, fmt.Errorf("%s: no function %s", file, fn)
	}
	slices.Sort(out)
	return out, nil
}
