package evidencecheck

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"qualkit/internal/schema"
)

var sumLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](.+)$`)

// checkSums: each SHA256SUMS lists every other file of its folder once, with its sha256.
// A row's list is anchored in the JUnit file (qualkit.sha256sums).
func (c *checker) checkSums(files map[string]bool) {
	c.checkSumList("", files)
	for f := range files {
		if dir, name := path.Split(f); name == schema.ChecksumFile && dir != "" && strings.Count(dir, "/") == 1 {
			c.checkSumList(dir, files)
		}
	}
}

// checkSumList: scope "" is the run folder, "<row>/" one row.
func (c *checker) checkSumList(scope string, files map[string]bool) {
	list := scope + schema.ChecksumFile
	raw, ok := c.read(list)
	if !ok {
		return // the layout check reports it missing
	}
	sums := map[string]string{} // run-relative path -> sha256
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := sumLine.FindStringSubmatch(line)
		where := fmt.Sprintf("line %d", n)
		switch {
		case m == nil:
			c.fail(list, where, `"<64 lowercase hex>  <path>" (sha256sum format)`, quote(line))
			continue
		case path.Clean(m[2]) != m[2] || path.IsAbs(m[2]) || m[2] == ".." || len(m[2]) > 2 && m[2][:3] == "../":
			c.fail(list, where, "a clean path inside its folder", quote(m[2]))
			continue
		case m[2] == schema.ChecksumFile:
			c.fail(list, where, "every file but SHA256SUMS itself", "lists "+schema.ChecksumFile)
			continue
		}
		f := scope + m[2]
		if _, dup := sums[f]; dup {
			c.fail(list, where, "each file listed once", m[2]+" listed again")
			continue
		}
		sums[f] = m[1]
	}
	listed := make([]string, 0, len(sums))
	for f := range sums {
		listed = append(listed, f)
	}
	sort.Strings(listed)
	for _, f := range listed {
		if !files[f] {
			c.fail(f, "listed in "+list, "listed with sha256 "+sums[f], "missing")
			continue
		}
		got, err := schema.FileSHA256(c.path(f))
		switch {
		case err != nil:
			c.fail(f, "sha256 ("+list+")", sums[f], err.Error())
		case got != sums[f]:
			c.fail(f, "sha256 ("+list+")", sums[f], got+" (the file was changed after the run)")
		case scope == "":
			c.rep.Files++
		}
	}
	var unlisted []string
	for f := range files {
		if _, ok := sums[f]; !ok && f != list && strings.HasPrefix(f, scope) {
			unlisted = append(unlisted, f)
		}
	}
	sort.Strings(unlisted)
	for _, f := range unlisted {
		c.fail(f, "listed in "+list, "every file of "+orDot(scope)+" listed", "not listed (added after the run)")
	}
}

func orDot(scope string) string {
	if scope == "" {
		return "the run folder"
	}
	return strings.TrimSuffix(scope, "/")
}

func bytesSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
