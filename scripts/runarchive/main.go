// Command runarchive packs evidence run folders into one archive and unpacks it
// (internal/runarchive):
//
//	go run ./scripts/runarchive pack -out docs/evidence/runs.tar.zst -root docs/evidence DIR...
//	go run ./scripts/runarchive extract -archive docs/evidence/runs.tar.zst -out /tmp/runs
//	go run ./scripts/runarchive list -archive docs/evidence/runs.tar.zst
package main

import (
	"flag"
	"fmt"
	"os"

	"qualkit/internal/runarchive"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runarchive:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("give a command: pack, extract or list")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	out := fs.String("out", "", "pack: the archive to write; extract: the new folder to write into")
	root := fs.String("root", ".", "pack: the folder the DIRs are relative to")
	archive := fs.String("archive", "", "extract, list: the archive")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "pack":
		if *out == "" || fs.NArg() == 0 {
			return fmt.Errorf("pack: give -out ARCHIVE and the run folders (relative to -root)")
		}
		return runarchive.Pack(*out, *root, fs.Args()...)
	case "extract":
		if *archive == "" || *out == "" {
			return fmt.Errorf("extract: give -archive ARCHIVE and -out FOLDER (new or empty)")
		}
		return runarchive.Extract(*archive, *out)
	case "list":
		if *archive == "" {
			return fmt.Errorf("list: give -archive ARCHIVE")
		}
		names, err := runarchive.List(*archive)
		for _, n := range names {
			fmt.Println(n)
		}
		return err
	}
	return fmt.Errorf("unknown command %q: pack, extract or list", args[0])
}
