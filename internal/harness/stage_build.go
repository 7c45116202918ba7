package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/schema"
)

// bundle is what the build made; its path is empty when the correctness case builds it.
type bundle struct {
	path, sha string
	info      *schema.BundleInfo
	entry     *entryLock
	toolsS    float64 // the family's tool commands
}

// build makes the family's programs, then the bundle, reusing a cached bundle only when
// its key (checkpoint, revision, profile, build settings, builder hash) matches.
func (r *row) build(ctx context.Context, p *progress, fx *fixtures.Workload) (b bundle, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Build)
	defer cancel()
	if r.inImage(schema.StageBuild) {
		if _, err := r.image(ctx, schema.StageBuild); err != nil {
			return b, err
		}
	}
	tools, err := r.c.Adapter.Tools(r.env)
	if err != nil {
		return b, fmt.Errorf("family tools: %w", err)
	}
	if b.toolsS, err = r.tools(ctx, p, tools.Commands); err != nil {
		return b, err
	}
	builderSHA, err := pathSHA256(tools.Builder)
	if err != nil {
		return b, fmt.Errorf("builder %s: %w", tools.Builder, err)
	}
	settings := tools.Settings
	keyJSON, _ := json.Marshal(map[string]any{ // map keys are sorted, so the key is canonical
		"family": r.c.Family, "backend": r.spec.Backend, "model": r.c.Model, "profile": r.c.Profile,
		"revision": r.c.Revision, "build_settings": settings, "builder_sha256": builderSHA,
	})
	key := bytesSHA256(keyJSON)[:32]
	info := &schema.BundleInfo{CacheKey: key, Builder: builderSHA, Settings: settings}
	b.info = info
	cache := r.spec.BundleDir
	if cache == "" {
		cache = filepath.Join(r.s.cfg.Root, ".cache", "bundles")
	}
	dir := filepath.Join(cache, key)
	final := filepath.Join(dir, r.c.Profile+".bundle")
	meta := filepath.Join(dir, entryFile)
	partial := filepath.Join(dir, fmt.Sprintf(".partial-%d", os.Getpid()))
	out := filepath.Join(partial, r.c.Profile+".bundle")
	ref := fx.ImagePath(fx.Pairs[0].Image)
	if r.spec.Build == nil {
		// Found, hashed and recorded once the case passed; never from the cache.
		info.ByCorrectness = true
		p.printf("the bundle is built by the family's correctness case (next stage)")
		return b, r.ev.WriteJSON(schema.BundleFile, info)
	}

	// Rows side by side building one bundle: one builds, the others take it from the
	// cache. Other processes are kept apart by the entry's lock (entryLock).
	defer bundleLocks.lock(dir)()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return b, err
	}
	lockPath := dir + ".lock"
	if b.entry, err = lockEntry(ctx, lockPath, false, true); err != nil {
		return b, fmt.Errorf("bundle cache: %w", err)
	}
	// With -rebuild, rows after the first take this run's fresh build.
	if _, fresh := r.s.built.Load(key); !r.s.cfg.Rebuild || fresh {
		entry, err := r.s.trustedEntry(meta, final, key)
		if err == nil {
			info.Path, info.SHA256, info.Cached = final, entry.SHA256, true
			info.BuiltBy, info.EntrySHA256 = entry.BuiltBy, entry.EntrySHA256
		} else if !errors.Is(err, os.ErrNotExist) {
			p.printf("bundle cache entry %s not reused: %v; building it again", key, err)
		}
	}
	if !info.Cached {
		b.entry.unlock() // building it again replaces the entry: only when no one holds it
		switch b.entry, err = lockEntry(ctx, lockPath, true, false); {
		case err == nil:
			if err := r.buildEntry(ctx, p, info, dir, partial, out, final, meta, ref); err != nil {
				return b, err
			}
			if err := b.entry.share(); err != nil {
				return b, fmt.Errorf("bundle cache: %w", err)
			}
			r.s.built.Store(key, true)
			builtHere.Store(dir, info.SHA256)
		case errors.Is(err, errEntryBusy):
			info.Private = "cache entry " + key + " is held by another run, which may be reading it: this row built its own bundle in its work folder and cached nothing"
			p.printf("bundle: %s", info.Private)
			own := filepath.Join(r.env.Work, "bundle")
			final = filepath.Join(own, r.c.Profile+".bundle")
			if err := r.buildBundle(ctx, p, info, own, final, ref); err != nil {
				return b, err
			}
		default:
			return b, fmt.Errorf("bundle cache: %w", err)
		}
	}
	info.Bytes = pathSize(final)
	b.path, b.sha = final, info.SHA256
	return b, r.ev.WriteJSON(schema.BundleFile, info)
}

// buildEntry builds into partial in the write-locked entry dir, renamed to final.
func (r *row) buildEntry(ctx context.Context, p *progress, info *schema.BundleInfo, dir, partial, out, final, meta, ref string) error {
	os.RemoveAll(dir)
	defer os.RemoveAll(partial)
	if err := r.buildBundle(ctx, p, info, partial, out, ref); err != nil {
		return err
	}
	if err := os.Rename(out, final); err != nil {
		return err
	}
	info.Path = final
	info.BuiltBy = r.s.Evidence.RunID + "/" + filepath.Base(r.ev.Dir)
	if err := writeJSON(meta, info); err != nil {
		return err
	}
	info.BuiltBy = ""
	return nil
}

func (r *row) buildBundle(ctx context.Context, p *progress, info *schema.BundleInfo, folder, out, ref string) error {
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return err
	}
	cmd, err := r.spec.Build(r.env, family.BuildSpec{Out: out, Reference: ref})
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	start := time.Now()
	if _, err := r.job(ctx, p, cmd, schema.BuildLog, r.env.GPUs, append(at(false, folder), at(true, filepath.Dir(ref))...)...); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	info.BuildS = time.Since(start).Seconds()
	if _, err := os.Stat(out); err != nil {
		return fmt.Errorf("build exited 0 but wrote no bundle at %s", out)
	}
	sha, err := pathSHA256(out)
	if err != nil {
		return err
	}
	info.Path, info.SHA256 = out, sha
	return nil
}

// entryFile is a cache entry's record of its bundle: the BundleInfo of the row that built it.
const entryFile = "bundle.json"

// runIDName is what a run id may be as a folder name (20261203T151833Z-3754-a1b2c3).
var runIDName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// trustedEntry says whether the cache entry at meta may be reused: it is for this key,
// the bundle hashes to what it recorded, and the row that built it is of this process or
// its evidence under the same root checks whole. A planted bundle is built again.
func (s *Suite) trustedEntry(meta, bundle, key string) (*schema.BundleInfo, error) {
	b, err := os.ReadFile(meta)
	if err != nil {
		return nil, err
	}
	var entry schema.BundleInfo
	if err := json.Unmarshal(b, &entry); err != nil {
		return nil, fmt.Errorf("its bundle.json: %w", err)
	}
	entry.EntrySHA256 = bytesSHA256(b)
	if entry.CacheKey != key {
		return nil, fmt.Errorf("its bundle.json is for key %q", entry.CacheKey)
	}
	sha, err := pathSHA256(bundle)
	if err != nil {
		return nil, err
	}
	if sha != entry.SHA256 {
		return nil, fmt.Errorf("the bundle hashes to %s, its entry recorded %s when it was built", sha, entry.SHA256)
	}
	if sha, _ := builtHere.Load(filepath.Dir(meta)); sha == entry.SHA256 {
		return &entry, nil // this process built it
	}
	run, row, ok := strings.Cut(entry.BuiltBy, "/")
	if !ok || !rowName.MatchString(row) || !runIDName.MatchString(run) {
		return nil, fmt.Errorf("the entry names no run and row that built it (built_by %q)", entry.BuiltBy)
	}
	rowDir := filepath.Join(filepath.Dir(s.Evidence.Dir), run, row)
	rec, err := os.ReadFile(filepath.Join(rowDir, filepath.FromSlash(schema.BundleFile)))
	if err != nil {
		return nil, fmt.Errorf("the run that built it (%s) has no evidence to vouch for it: %w", entry.BuiltBy, err)
	}
	var built schema.BundleInfo
	if err := json.Unmarshal(rec, &built); err != nil || built.SHA256 != entry.SHA256 || built.CacheKey != key {
		return nil, fmt.Errorf("%s/%s records sha256 %q for key %q, not this bundle", entry.BuiltBy, schema.BundleFile, built.SHA256, built.CacheKey)
	}
	sums, err := os.ReadFile(filepath.Join(rowDir, schema.ChecksumFile))
	if err != nil || !strings.Contains("\n"+string(sums), "\n"+bytesSHA256(rec)+"  "+schema.BundleFile+"\n") {
		return nil, fmt.Errorf("%s/%s does not list its %s as it is", entry.BuiltBy, schema.ChecksumFile, schema.BundleFile)
	}
	// A planter can recompute the lists: the run must check whole (Reporter.Vouch).
	if err := s.vouches(filepath.Dir(rowDir)); err != nil {
		return nil, fmt.Errorf("the run that built it (%s) does not check: %w", entry.BuiltBy, err)
	}
	return &entry, nil
}

// pathSHA256 hashes a file, or a directory as the sorted list of its files' hashes.
func pathSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return schema.FileSHA256(path)
	}
	var lines []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sum, err := schema.FileSHA256(p)
		rel, _ := filepath.Rel(path, p)
		lines = append(lines, filepath.ToSlash(rel)+"\x00"+sum)
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(lines)
	return bytesSHA256([]byte(strings.Join(lines, "\n"))), nil
}

func pathSize(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// The bundle cache is shared by every suite of the process (negative controls run one
// per fault): entries are locked, and what it built is remembered (entry -> sha256).
var (
	bundleLocks keyLocks
	builtHere   sync.Map
)

type keyLocks struct{ m sync.Map }

func (k *keyLocks) lock(key string) func() {
	v, _ := k.m.LoadOrStore(key, &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// tools runs the family's tool commands one row at a time: they write shared caches.
func (r *row) tools(ctx context.Context, p *progress, tools []family.Command) (wallS float64, err error) {
	defer r.s.keys.lock("tools\x00" + r.c.Family)()
	for i, cmd := range tools {
		rec, err := r.job(ctx, p, cmd, schema.ToolsLog(i+1), r.env.GPUs)
		wallS += rec.WallS
		if err != nil {
			return wallS, fmt.Errorf("family tools: %w", err)
		}
	}
	if check := r.spec.CheckTools; check != nil {
		if err := check(r.env); err != nil {
			return wallS, fmt.Errorf("family tools: %w", err)
		}
	}
	return wallS, nil
}

// vouches checks, once per run folder, a finished run that would vouch for a reused
// bundle (Reporter.Vouch); with no Reporter it vouches for nothing.
func (s *Suite) vouches(runDir string) error {
	s.vouchMu.Lock() // not s.mu: a check takes seconds, and rows register meanwhile
	defer s.vouchMu.Unlock()
	if err, ok := s.vouched[runDir]; ok {
		return err
	}
	err := errors.New("no checker to run on it (SuiteConfig.Reporter is nil)")
	if s.cfg.Reporter != nil {
		err = s.cfg.Reporter.Vouch(runDir)
	}
	s.vouched[runDir] = err
	return err
}

// entryLock locks a bundle cache entry (.cache/bundles/<key>), shared by every process
// of the checkout: a row holds the read lock on <key>.lock until it ends, and removing or
// rebuilding the entry takes the write lock (else a run that did not trust an entry
// removed it while another's correctness case read it). On Linux they are open file
// description locks: rows of one process exclude each other as processes do, a dead
// process drops them, and a write lock becomes a read lock atomically.
type entryLock struct{ f *os.File }

var errEntryBusy = errors.New("the bundle cache entry is in use by another run")

// lockEntry opens path (creating it) and takes its read lock (write: its write lock).
// With wait it retries until ctx ends, else it fails at once with errEntryBusy.
func lockEntry(ctx context.Context, path string, write, wait bool) (*entryLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &entryLock{f: f}
	for {
		err := l.set(write)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errEntryBusy) || !wait {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the bundle cache entry %s, which another run is building: %w", path, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// share turns a write lock into a read lock atomically.
func (l *entryLock) share() error { return l.set(false) }

// unlock is nil-safe.
func (l *entryLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
