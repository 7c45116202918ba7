// Package evidencerepo is the repository a run's evidence names, as the evidence checker
// reads it (it implements evidencecheck.Repo): whether a commit exists, the files of its tree, and the
// qual tables its own code defines. It runs git and, for the tables, that commit's qual
// package; the checker itself runs neither, so its tests can give it any history.
package evidencerepo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"qualkit/internal/schema"
)

// Git is a clone on disk.
type Git struct {
	Root string // the work tree's top folder
	// Cache holds each commit's tables export (<commit>.json); default Root/.cache/tables.
	Cache string
}

// Open finds the clone that holds dir; an error when dir is in none (or git is absent).
func Open(dir string) (*Git, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return nil, fmt.Errorf("%s is in no git clone: %w", dir, gitErr(err))
	}
	root := strings.TrimSpace(string(out))
	return &Git{Root: root, Cache: filepath.Join(root, ".cache", "tables")}, nil
}

var commitID = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (g *Git) git(args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", g.Root}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), gitErr(err))
	}
	return out, nil
}

func gitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

// HasCommit is `git cat-file -e <commit>^{commit}`: false for an id the clone has no
// commit of (a shallow clone lacks old ones: fetch them with git fetch --unshallow).
func (g *Git) HasCommit(commit string) (bool, error) {
	if !commitID.MatchString(commit) {
		return false, nil
	}
	err := exec.Command("git", "-C", g.Root, "cat-file", "-e", commit+"^{commit}").Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee):
		return false, nil
	}
	return false, fmt.Errorf("git cat-file: %w", err)
}

// Paths is `git ls-tree -r --name-only <commit>`.
func (g *Git) Paths(commit string) ([]string, error) {
	out, err := g.git("ls-tree", "-r", "-z", "--name-only", commit)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), nil
}

// File is `git cat-file blob <commit>:<path>`.
func (g *Git) File(commit, path string) ([]byte, error) {
	return g.git("cat-file", "blob", commit+":"+path)
}

// Tables are the qual tables' rows at commit, as that commit's own qual package (built
// from `git archive` with exportShim) prints them; the export is cached in
// Cache/<commit>-<shim>[-<env>].json (delete it to rebuild). It runs in this process's
// environment, since a table may add a row only when a QUALKIT_* variable is set, as in
// the run: the checker needs the run's variables, and the cache is kept per their values.
func (g *Git) Tables(commit string) ([]schema.TableRow, error) {
	if !commitID.MatchString(commit) {
		return nil, fmt.Errorf("tables: %q is no commit id", commit)
	}
	cached := filepath.Join(g.Cache, commit+"-"+shimKey+envKey(os.Environ())+".json")
	b, err := os.ReadFile(cached)
	if errors.Is(err, os.ErrNotExist) {
		if b, err = g.exportTables(commit); err == nil {
			err = writeAtomic(cached, b)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the qual tables at %s: %w", commit[:12], err)
	}
	var rows []schema.TableRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("the qual tables at %s: %s: %w (delete it to export them again)", commit[:12], cached, err)
	}
	return rows, nil
}

// envKey tells apart the environments a commit's tables are exported in: "" with no
// QUALKIT_* variable set, else "-" and the start of the sha256 of their values.
func envKey(environ []string) string {
	var own []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "QUALKIT_") && !strings.HasPrefix(kv, exportEnv+"=") {
			own = append(own, kv)
		}
	}
	if len(own) == 0 {
		return ""
	}
	slices.Sort(own)
	sum := sha256.Sum256([]byte(strings.Join(own, "\x00")))
	return "-" + hex.EncodeToString(sum[:6])
}

// shimKey tells apart exports by the shim that made them: a new shim exports more.
var shimKey = func() string {
	sum := sha256.Sum256([]byte(exportShim))
	return hex.EncodeToString(sum[:4])
}()

// exportEnv names the file the shim writes the rows to; unset, the shim does nothing.
const exportEnv = "QUALKIT_EXPORT_TABLE_ROWS"

// exportShim is added to the commit's qual package: its init writes every row of the
// tables and exits. One shim compiles at every commit, so it reads the tables by
// reflection: a variable or (since 00b7054) a function returning them; each table's test
// by its name field or its test function; each row's fields every commit has had, and
// the backend from Backend() (before the family contract) or Describe(...).Backend, and
// the sha256 of Describe(...).Controls (since the controls stage).
const exportShim = `package qual

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"runtime"
	"strings"
	"unsafe"
)

// exportSpec is what the family's Describe(zero values...) returns, and whether it
// returned no error.
func exportSpec(f any) (reflect.Value, bool) {
	if f == nil {
		return reflect.Value{}, false
	}
	m := reflect.ValueOf(f).MethodByName("Describe")
	if !m.IsValid() {
		return reflect.Value{}, false
	}
	in := make([]reflect.Value, m.Type().NumIn())
	for i := range in {
		in[i] = reflect.Zero(m.Type().In(i))
	}
	out := m.Call(in)
	if len(out) == 0 || out[0].Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	err, _ := out[len(out)-1].Interface().(error)
	return out[0], err == nil
}

// backendOf is the family's Backend(), or the Backend field of its spec.
func backendOf(f any) string {
	if b, ok := f.(interface{ Backend() string }); ok {
		return b.Backend()
	}
	if s, _ := exportSpec(f); s.IsValid() && s.FieldByName("Backend").Kind() == reflect.String {
		return s.FieldByName("Backend").String()
	}
	return ""
}

// controlsOf is the sha256 of the spec's Controls as JSON, keys sorted and spaces
// dropped; "" where the commit's spec has no Controls, Describe failed, or it declares
// none here (a family that reads them from a checkout this export does not see).
func controlsOf(f any) string {
	s, ok := exportSpec(f)
	if !ok {
		return ""
	}
	c := s.FieldByName("Controls")
	if c.Kind() != reflect.Pointer || c.IsNil() {
		return ""
	}
	var doc any
	b, err := json.Marshal(c.Interface())
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err == nil {
		b, err = json.Marshal(doc)
	}
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func init() {
	out := os.Getenv("` + exportEnv + `")
	if out == "" {
		return
	}
	rows := []map[string]any{}
	tbs := reflect.ValueOf(tables)
	if tbs.Kind() == reflect.Func {
		tbs = tbs.Call(nil)[0]
	}
	for i := range tbs.Len() {
		tb := tbs.Index(i)
		test := tb.FieldByName("test")
		if !test.IsValid() {
			name := runtime.FuncForPC(tb.FieldByName("run").Pointer()).Name()
			test = reflect.ValueOf(name[strings.LastIndex(name, ".")+1:])
		}
		rs := tb.FieldByName("rows")
		rs = reflect.NewAt(rs.Type(), unsafe.Pointer(rs.UnsafeAddr())).Elem() // unexported
		for j := range rs.Len() {
			c := rs.Index(j).FieldByName
			rows = append(rows, map[string]any{"test": test.String(), "row": c("Name").String(), "family": c("Family").String(),
				"backend": backendOf(c("Adapter").Interface()), "controls": controlsOf(c("Adapter").Interface()), "model": c("Model").String(), "profile": c("Profile").String(),
				"smoke": c("Smoke").Bool(), "double": c("Double").Bool(),
				"measured": c("Bench").FieldByName("Measured").Int(), "warmup": c("Bench").FieldByName("Warmup").Int()})
		}
	}
	b, err := json.Marshal(rows)
	if err == nil {
		err = os.WriteFile(out, b, 0o644)
	}
	if err != nil {
		os.Stderr.WriteString("qual tables export: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}
`

// exportTables builds the commit's qual test binary with exportShim and runs it.
func (g *Git) exportTables(commit string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "qualkit-tables-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	// The evidence archives are left out: building qual needs none of them.
	arch, err := g.git("archive", "--format=tar", commit, "--", ".", ":!docs/evidence", ":!internal/evidencecheck/testdata")
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(src, 0o755); err != nil {
		return nil, err
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = bytes.NewReader(arch)
	if out, err := untar.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("unpack: %w\n%s", err, clip(out))
	}
	if err := os.WriteFile(filepath.Join(src, "qual", "zz_qualkit_tables_export_test.go"), []byte(exportShim), 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(tmp, "qual.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./qual")
	build.Dir, build.Env = src, append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build its qual package with the export shim: %w\n%s", err, clip(out))
	}
	outFile := filepath.Join(tmp, "rows.json")
	run := exec.Command(bin)
	run.Dir, run.Env = filepath.Join(src, "qual"), append(os.Environ(), exportEnv+"="+outFile)
	if out, err := run.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("run its qual package's export: %w\n%s", err, clip(out))
	}
	return os.ReadFile(outFile)
}

func clip(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// writeAtomic writes b to p by a rename, so a reader beside it sees all of it or none.
func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tables-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
