// Command venvrecords writes scripts/venv-records.txt: the RECORD digest
// (harness.RecordDigest) of each distribution of a clean install of the pins, for this
// host's Python version and platform (other lines are kept). A run's venv whose
// installed files are not a clean install's makes the tree dirty.
//
//	go run ./scripts/venvrecords              # installs the pins afresh in a temporary folder (scripts/setup.sh), then writes
//	go run ./scripts/venvrecords -venv DIR    # from a venv scripts/setup.sh made and nothing changed since
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"qualkit/internal/harness"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("venvrecords", flag.ContinueOnError)
	fs.SetOutput(stderr)
	venv := fs.String("venv", "", "a venv scripts/setup.sh made (default: install the pins afresh in a temporary folder)")
	out := fs.String("out", "", "the file to write (default: "+harness.VenvRecordsFile+" of the repository)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return 2
	}
	root, err := harness.FindRoot(".")
	if err != nil {
		fmt.Fprintln(stderr, "venvrecords:", err)
		return 1
	}
	if *out == "" {
		*out = filepath.Join(root, filepath.FromSlash(harness.VenvRecordsFile))
	}
	if *venv == "" {
		tmp, err := os.MkdirTemp("", "qualkit-venvrecords-")
		if err != nil {
			fmt.Fprintln(stderr, "venvrecords:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		*venv = filepath.Join(tmp, "venv")
		setup := exec.Command("bash", filepath.Join(root, "scripts", "setup.sh"))
		setup.Env = append(os.Environ(), "VENV="+*venv, "QUALKIT_VENV_CACHE=off")
		setup.Stdout, setup.Stderr = stderr, stderr
		if err := setup.Run(); err != nil {
			fmt.Fprintln(stderr, "venvrecords: a clean install of the pins:", err)
			return 1
		}
	}
	tag, err := harness.VenvTag(*venv)
	if err == nil {
		err = write(*venv, tag, *out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "venvrecords:", err)
		return 1
	}
	fmt.Fprintf(stdout, "venvrecords: %s: the RECORD digests of %s (%s)\n", *out, *venv, tag)
	return 0
}

// write replaces the file's lines of tag with the venv's digests.
func write(venv, tag, out string) error {
	recs, err := harness.VenvRecords(venv)
	if err != nil {
		return err
	}
	var lines []string
	if b, err := os.ReadFile(out); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			l := sc.Text()
			if f := strings.Fields(l); len(f) == 3 && f[0] != tag {
				lines = append(lines, l)
			}
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	for dist, digest := range recs {
		lines = append(lines, tag+" "+dist+" "+digest)
	}
	sort.Strings(lines)
	head := "# The RECORD digest (internal/harness RecordDigest) of each distribution of a clean install of\n" +
		"# scripts/requirements.txt with scripts/constraints.txt, per Python version and platform:\n" +
		"# `go run ./scripts/venvrecords` writes it. A run's venv whose digests differ is dirty.\n"
	return os.WriteFile(out, []byte(head+strings.Join(lines, "\n")+"\n"), 0o644)
}
