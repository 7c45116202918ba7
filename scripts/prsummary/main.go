// Command prsummary writes PR.md (and with -html, index.html) for one run folder
// (internal/prsummary).
//
//	go run ./scripts/prsummary -dir evidence/latest                 # PR.md on stdout
//	go run ./scripts/prsummary -dir evidence/<run id> -write -html  # PR.md + index.html in the run folder
//
// -write puts the files into the run folder, which its SHA256SUMS then no longer
// covers: use it on a run of your own.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"qualkit/internal/inventory"
	"qualkit/internal/prsummary"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "prsummary:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prsummary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "run folder: evidence/<run id> (evidence/latest works)")
	var o prsummary.Options
	fs.StringVar(&o.TRTMC, "trtmc", "", "TRTMC checkout for the inventory table (default: the committed "+prsummary.DefaultInventory+")")
	tables := fs.String("tables", ".cache/tables.json", "the table registry's export (make tables writes it): the qual rows the inventory status counts")
	fs.StringVar(&o.EvidenceRoot, "evidence", "", "evidence root the inventory status is proven from (default: the run folder's parent)")
	write := fs.Bool("write", false, "snapshot the inventory into checkpoints.json and write PR.md into the run folder, instead of printing PR.md as the folder renders it")
	fs.BoolVar(&o.HTML, "html", false, "with -write, also write index.html")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		fs.Usage()
		return errors.New("-dir is required")
	}
	if resolved, err := filepath.EvalSymlinks(*dir); err == nil {
		*dir = resolved
	}
	if *write {
		rows, err := inventory.ReadTables(*tables)
		if err != nil {
			return err
		}
		o.Rows = rows
		if err := prsummary.Write(*dir, o); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*dir, prsummary.MarkdownFile))
		return nil
	}
	md, err := prsummary.Markdown(*dir)
	if err != nil {
		return err
	}
	_, err = stdout.Write(md)
	return err
}
