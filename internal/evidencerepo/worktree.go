package evidencerepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// WorkTree is the top folder of the git work tree a file at path would be in ("" when
// none): a secret there is one `git add` from being published, and an untracked file
// there makes every run of that tree dirty (passed-dirty-tree, never qualified).
func WorkTree(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	for ; ; dir = filepath.Dir(dir) {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			break
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Untracked is the work tree where a file written at path would make the tree dirty: in
// a work tree and not ignored by it ("" otherwise).
func Untracked(path string) string {
	top := WorkTree(path)
	if top == "" {
		return ""
	}
	abs, _ := filepath.Abs(path)
	if exec.Command("git", "-C", top, "check-ignore", "-q", "--no-index", abs).Run() == nil {
		return ""
	}
	return top
}
