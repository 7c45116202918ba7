// Command inventory classifies every testcase profile of a TRTMC checkout for the
// image-edit workload and writes INVENTORY.md and inventory.json.
//
//	go run ./scripts/inventory -trtmc ../TensorRT-Model-Connect            # writes ./INVENTORY.md, ./inventory.json
//	go run ./scripts/inventory -trtmc DIR -json                           # JSON array on stdout, no files
//	go run ./scripts/inventory -trtmc DIR -out docs -tables .cache/tables.json -evidence evidence
//
// Notes about evidence that proves nothing go to stderr.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"qualkit/families/all"
	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/inventory"
	"qualkit/internal/schema"
)

type options struct {
	trtmc    string
	json     bool
	out      string
	tables   string
	evidence string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "inventory:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("inventory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.trtmc, "trtmc", "", "TRTMC checkout to read (required): the directory holding tests/e2e/models/*/MODEL.toml")
	fs.BoolVar(&o.json, "json", false, "print the inventory as a JSON array on stdout instead of writing files")
	fs.StringVar(&o.out, "out", ".", "directory for "+inventory.MarkdownFile+" and "+inventory.JSONFile)
	fs.StringVar(&o.tables, "tables", ".cache/tables.json", "the table registry's export (make tables writes it): the qual rows")
	fs.StringVar(&o.evidence, "evidence", "evidence", "evidence root: <run-id>/<row>/"+schema.ResultsFile)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.trtmc == "" {
		fs.Usage()
		return errors.New("-trtmc is required: pass a TensorRT-Model-Connect checkout (make inventory TRTMC=DIR)")
	}

	inv, err := inventory.Load(o.trtmc)
	if err != nil {
		return err
	}
	rows, err := inventory.ReadTables(o.tables)
	if err != nil {
		return err
	}
	progress, err := inventory.LoadProgress(inventory.Profiles(rows), o.evidence)
	if err != nil {
		return err
	}
	for _, n := range progress.Notes {
		fmt.Fprintln(stderr, "inventory: note:", n)
	}
	inv.ApplyProgress(progress)
	// Each profile's supported controls are what the family that serves it through TRTMC
	// declares for its checkpoint (families/all.SupportedControls; "not declared" else).
	for i, p := range inv.Profiles {
		inv.Profiles[i].SupportedControls = all.SupportedControls(qwenimage.BackendTRTMC, p.HFID)
	}

	if o.json {
		return inv.WriteJSON(stdout)
	}
	if err := inv.WriteFiles(o.out); err != nil {
		return err
	}
	counts := inv.Counts()
	fmt.Fprintf(stdout, "%d profiles from %s:", len(inv.Profiles), inv.Source)
	for _, c := range inventory.Classes {
		fmt.Fprintf(stdout, " %s %d", c, counts[c])
	}
	fmt.Fprintf(stdout, "; wrote %s and %s in %s\n", inventory.MarkdownFile, inventory.JSONFile, o.out)
	return nil
}
