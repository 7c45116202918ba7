package serving

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/schema"
)

// A build context staged from a Dockerfile's COPY lines. Some projects' documented
// `docker build -f F .` fails as written: TRTMC's root .dockerignore at e9132e79 is `*`
// plus an allow-list that leaves out requirements/, while its Dockerfile.dev.x86 does
// `COPY requirements/community-ci.txt`. StageContext lays out a context of exactly what
// the Dockerfile copies, from the first candidate root that has it all, with sha256s.

const StagedDockerfile = ".qualkit-Dockerfile"

type BuildContext struct {
	schema.ImageContext
	Dir string
}

// CopySources lists the build-context sources of the Dockerfile's COPY and ADD lines, in
// order, once each (not --from=, URLs or heredocs); a $VAR source is an error.
func CopySources(dockerfile string) ([]string, error) {
	ins, err := instructions(dockerfile)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range ins {
		fields := strings.Fields(in.text)
		if len(fields) == 0 {
			continue
		}
		op := strings.ToUpper(fields[0])
		if op != "COPY" && op != "ADD" {
			continue
		}
		args := strings.TrimSpace(in.text[len(fields[0]):])
		var from bool
		for strings.HasPrefix(args, "--") {
			flag, rest, _ := strings.Cut(args, " ")
			from = from || strings.HasPrefix(flag, "--from=")
			args = strings.TrimSpace(rest)
		}
		if from || strings.Contains(args, "<<") {
			continue
		}
		var words []string
		if strings.HasPrefix(args, "[") {
			if err := json.Unmarshal([]byte(args), &words); err != nil {
				return nil, fmt.Errorf("%s:%d: %s: not a JSON array: %w", dockerfile, in.line, op, err)
			}
		} else {
			words = strings.Fields(args)
		}
		if len(words) < 2 {
			return nil, fmt.Errorf("%s:%d: %s needs a source and a destination: %q", dockerfile, in.line, op, in.text)
		}
		for _, src := range words[:len(words)-1] {
			switch {
			case strings.Contains(src, "://"):
				continue
			case strings.Contains(src, "$"):
				return nil, fmt.Errorf("%s:%d: %s source %q names a build argument: qualkit cannot tell which files it copies before the build", dockerfile, in.line, op, src)
			}
			src = strings.TrimPrefix(path.Clean("/"+src), "/")
			if src == "" {
				src = "."
			}
			if !slices.Contains(out, src) {
				out = append(out, src)
			}
		}
	}
	return out, nil
}

type instruction struct {
	line int
	text string
}

// instructions reads a Dockerfile's instructions, continuation lines joined.
func instructions(dockerfile string) ([]instruction, error) {
	f, err := os.Open(dockerfile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		more := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\"))
		cur.WriteString(" ")
		if !more {
			out = append(out, instruction{start, strings.TrimSpace(cur.String())})
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		out = append(out, instruction{start, strings.TrimSpace(cur.String())})
	}
	return out, sc.Err()
}

// StageContext lays out in dir (which must not exist) every file dockerfile's COPY and
// ADD sources name (globs, folders whole), from the first of roots that has them all,
// and the Dockerfile as StagedDockerfile. No .dockerignore applies.
func StageContext(dockerfile string, roots []string, dir string) (BuildContext, error) {
	srcs, err := CopySources(dockerfile)
	if err != nil {
		return BuildContext{}, err
	}
	root, err := contextRoot(dockerfile, srcs, roots)
	if err != nil {
		return BuildContext{}, err
	}
	bc := BuildContext{ImageContext: schema.ImageContext{Dockerfile: dockerfile, Root: root, Sources: srcs}, Dir: dir}
	files := map[string]bool{}
	stage := func() error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for _, src := range srcs {
			matches, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(src)))
			for _, m := range matches {
				err := filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					rel, err := filepath.Rel(root, p)
					files[rel] = true
					return err
				})
				if err != nil {
					return err
				}
			}
		}
		for _, rel := range slices.Sorted(maps.Keys(files)) {
			cf, err := copyInto(filepath.Join(root, rel), filepath.Join(dir, rel))
			if err != nil {
				return err
			}
			cf.Path = filepath.ToSlash(rel)
			bc.Files = append(bc.Files, cf)
		}
		_, err := copyInto(dockerfile, filepath.Join(dir, StagedDockerfile))
		return err
	}
	if err := stage(); err != nil {
		return BuildContext{}, fmt.Errorf("stage the build context: %w", err)
	}
	bc.SHA256 = bc.ListSHA256()
	return bc, nil
}

// ListSHA256 is the sha256 of "<sha256> <size> <path>\n" per file, in order.
func (bc BuildContext) ListSHA256() string {
	h := sha256.New()
	for _, f := range bc.Files {
		fmt.Fprintf(h, "%s %d %s\n", f.SHA256, f.Size, f.Path)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// contextRoot is the first root under which every source matches at least one path.
func contextRoot(dockerfile string, srcs, roots []string) (string, error) {
	var tried []string
	for _, root := range roots {
		var missing []string
		for _, src := range srcs {
			if m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(src))); len(m) == 0 {
				missing = append(missing, src)
			}
		}
		if len(missing) == 0 {
			return root, nil
		}
		tried = append(tried, fmt.Sprintf("%s lacks %s", root, strings.Join(missing, ", ")))
	}
	return "", fmt.Errorf("%s copies %s, but no candidate context folder holds them all (%s): check the Dockerfile against the checkout",
		dockerfile, strings.Join(srcs, ", "), strings.Join(tried, "; "))
}

// copyInto copies the regular file src (links followed) to dst with its mode.
func copyInto(src, dst string) (schema.ContextFile, error) {
	in, err := os.Open(src)
	if err != nil {
		return schema.ContextFile{}, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return schema.ContextFile{}, err
	}
	if !st.Mode().IsRegular() {
		return schema.ContextFile{}, fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return schema.ContextFile{}, err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, st.Mode().Perm())
	if err != nil {
		return schema.ContextFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return schema.ContextFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}
