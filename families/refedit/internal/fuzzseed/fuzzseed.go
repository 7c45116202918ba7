// Package fuzzseed keeps the named seed corpora of refedit's fuzz targets committed.
// Test code only; it knows nothing of what the targets fuzz.
package fuzzseed

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Seed is one named file of a committed seed corpus: the fuzz target's arguments.
type Seed struct {
	Name string
	Args []any
}

// Sync checks that each seed is committed under testdata/fuzz/target, or (re)writes them
// all when write is set; their bytes are not compared (an encoder's may change with Go).
func Sync(f *testing.F, target string, seeds []Seed, write bool) {
	f.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if write {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range seeds {
		path := filepath.Join(dir, s.Name)
		if write {
			if err := os.WriteFile(path, Marshal(s.Args...), 0o644); err != nil {
				f.Fatal(err)
			}
		} else if _, err := os.Stat(path); err != nil {
			f.Fatalf("seed %s is not committed (%v); write it with -args -write-fuzz-seeds", path, err)
		}
	}
}

// Marshal writes go's "go test fuzz v1" corpus format for []byte, string and byte args.
func Marshal(args ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case byte:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		default:
			panic(fmt.Sprintf("fuzzseed.Marshal: unsupported type %T", a))
		}
	}
	return b.Bytes()
}
