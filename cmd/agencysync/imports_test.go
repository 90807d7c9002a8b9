package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers is the drawing of doc.go: a product package may import only
// packages of a lower layer.
var layers = map[string]int{
	"config": 0, "logging": 0, "migrations": 0, "progress": 0, "spool": 0, "stream": 0, "inventory": 0,
	"extract": 1, "metrics": 1,
	"transform": 2,
	"load":      3, "warehouse": 3, "check": 3,
	"engine": 4,
	"serve":  5, "notify": 5, "report": 5,
	"fleet":          6,
	"cli":            7,
	"cmd/agencysync": 8,
}

const module = "github.com/agencysync/agencysync/"

// TestImportsPointDown reads the imports of every non-test file of the
// product's packages and checks them against layers.
func TestImportsPointDown(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for pkg, layer := range layers {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				dep, ok := strings.CutPrefix(path, module)
				if !ok {
					continue
				}
				dl, known := layers[dep]
				switch {
				case !known:
					t.Errorf("%s imports %s, which doc.go does not place", f, dep)
				case dl >= layer:
					t.Errorf("%s (%s, layer %d) imports %s (layer %d): imports must point down", f, pkg, layer, dep, dl)
				}
			}
		}
	}
	// Every product package is placed.
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if goFiles, _ := filepath.Glob(filepath.Join(root, e.Name(), "*.go")); len(goFiles) == 0 {
			continue
		}
		if _, ok := layers[e.Name()]; !ok && !strings.HasPrefix(e.Name(), ".") && e.Name() != "reliability" && e.Name() != "deploy" && e.Name() != "configs" {
			t.Errorf("package %s is not in doc.go's drawing", e.Name())
		}
	}
}
