// Package prsummary writes what a pull request shows about a run: PR.md (the checkpoint
// status table from the inventory, the result rows with their reproducible commands,
// the software and hardware versions, and links to the pictures) and index.html, a
// static page for browsing the evidence folder from disk.
//
// It reads a finished run folder and the inventory; it writes only PR.md and
// index.html. It must not import the harness (the harness calls it) and vouches for no
// number itself: the result rows are the rows' row.md lines verbatim, which
// internal/evidencecheck proves against the raw records, PR.md included.
package prsummary
