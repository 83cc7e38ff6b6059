package output

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// spelledElsewhere are the non-test files outside this package that may still spell a word of
// the vocabulary, and why.
var spelledElsewhere = map[string]string{}

// TestVocabularyIsSpelledHere: the report keys (reportkeys.go, and every statistic of every
// distribution) and the target names that are no common word are spelled in this package only.
// Every other non-test Go file names them through the constants: no string literal, and no json
// tag, outside this package is one of them.
func TestVocabularyIsSpelledHere(t *testing.T) {
	words := vocabulary(t)
	_, self, _, _ := runtime.Caller(0)
	here := filepath.Dir(self)
	root := here
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above this package")
		}
		root = parent
	}
	// The detector finds the words where they are spelled: in this package.
	if hits := spelled(t, filepath.Join(here, "reportkeys.go"), words); len(hits) < 20 {
		t.Fatalf("reportkeys.go spells %d words of the vocabulary; the detector is broken", len(hits))
	}
	files, stale := 0, map[string]bool{}
	for f := range spelledElsewhere {
		stale[f] = true
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "vendor", "node_modules", "bin":
				return filepath.SkipDir
			}
			if path == here {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		hits := spelled(t, path, words)
		if _, ok := spelledElsewhere[filepath.ToSlash(rel)]; ok {
			if len(hits) > 0 {
				delete(stale, filepath.ToSlash(rel))
			}
			return nil
		}
		for _, h := range hits {
			t.Errorf("%s:%s spells %q: name it through internal/aisimulate/output's constants", rel, h.pos, h.word)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 200 {
		t.Fatalf("read %d Go files under %s; the walk is broken", files, root)
	}
	for _, f := range slices.Sorted(maps.Keys(stale)) {
		t.Errorf("%s spells no word of the vocabulary any more: drop it from spelledElsewhere", f)
	}
}

// vocabulary is every report key and the target names that are no common word (throughput,
// goodput, ttft and pareto are also the API's and the Planner's words).
func vocabulary(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "reportkeys.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{}).Check("output", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	consts := map[string][]string{}
	for id, obj := range info.Defs {
		c, ok := obj.(*types.Const)
		if !ok || c.Val().Kind() != constant.String {
			continue
		}
		for _, prefix := range []string{"Key", "Stat", "Dist"} {
			if strings.HasPrefix(id.Name, prefix) {
				consts[prefix] = append(consts[prefix], constant.StringVal(c.Val()))
			}
		}
	}
	words := map[string]bool{}
	for _, k := range consts["Key"] {
		words[k] = true
	}
	for _, stat := range consts["Stat"] {
		for _, dist := range consts["Dist"] {
			words[StatKey(stat, dist)] = true
		}
	}
	for _, side := range []string{RolePrefill, RoleDecode} {
		words[GPUsPerWorkerKey(side)], words[WorkerSecondsKey(side)] = true, true
	}
	for _, name := range TargetNames() {
		if strings.Contains(name, "_") {
			words[name] = true
		}
	}
	if len(consts["Key"]) < 30 || len(consts["Stat"]) < 10 || len(consts["Dist"]) < 6 {
		t.Fatalf("read %d keys, %d statistics, %d distributions from reportkeys.go", len(consts["Key"]), len(consts["Stat"]), len(consts["Dist"]))
	}
	return words
}

type hit struct{ pos, word string }

// spelled lists the string literals of the Go file at path that are words of the vocabulary,
// and the json tags that name one.
func spelled(t *testing.T, path string, words map[string]bool) []hit {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []hit
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		if tag, _, _ := strings.Cut(reflect.StructTag(v).Get("json"), ","); words[tag] {
			v = tag
		}
		if words[v] {
			out = append(out, hit{pos: strconv.Itoa(fset.Position(lit.Pos()).Line), word: v})
		}
		return true
	})
	return out
}
