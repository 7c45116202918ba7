package evidencecheck

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
)

// ChecksumFile is the run folder's checksum list, in sha256sum format.
const ChecksumFile = "SHA256SUMS"

var sumLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](.+)$`)

// checkSums requires SHA256SUMS to list every other file exactly once, with its sha256.
func (c *checker) checkSums(files map[string]bool) {
	raw, ok := c.read(ChecksumFile)
	if !ok {
		return // the layout check reports it missing
	}
	c.sums = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := sumLine.FindStringSubmatch(line)
		where := fmt.Sprintf("line %d", n)
		switch {
		case m == nil:
			c.fail(ChecksumFile, where, `"<64 lowercase hex>  <path>" (sha256sum format)`, quote(line))
			continue
		case path.Clean(m[2]) != m[2] || path.IsAbs(m[2]) || m[2] == ".." || len(m[2]) > 2 && m[2][:3] == "../":
			c.fail(ChecksumFile, where, "a clean path inside the run folder", quote(m[2]))
			continue
		case m[2] == ChecksumFile:
			c.fail(ChecksumFile, where, "every file but SHA256SUMS itself", "lists "+ChecksumFile)
			continue
		}
		if _, dup := c.sums[m[2]]; dup {
			c.fail(ChecksumFile, where, "each file listed once", m[2]+" listed again")
			continue
		}
		c.sums[m[2]] = m[1]
	}
	listed := make([]string, 0, len(c.sums))
	for f := range c.sums {
		listed = append(listed, f)
	}
	sort.Strings(listed)
	for _, f := range listed {
		if !files[f] {
			c.fail(f, "listed in "+ChecksumFile, "listed with sha256 "+c.sums[f], "missing")
			continue
		}
		got, err := fileSHA256(c.path(f))
		switch {
		case err != nil:
			c.fail(f, "sha256 ("+ChecksumFile+")", c.sums[f], err.Error())
		case got != c.sums[f]:
			c.fail(f, "sha256 ("+ChecksumFile+")", c.sums[f], got+" (the file was changed after the run)")
		default:
			c.rep.Files++
		}
	}
	var unlisted []string
	for f := range files {
		if _, ok := c.sums[f]; !ok && f != ChecksumFile {
			unlisted = append(unlisted, f)
		}
	}
	sort.Strings(unlisted)
	for _, f := range unlisted {
		c.fail(f, "listed in "+ChecksumFile, "every file of the run folder listed", "not listed (added after the run)")
	}
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func bytesSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
