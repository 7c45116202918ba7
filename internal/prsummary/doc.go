// Package prsummary writes what a pull request shows about a run: PR.md (the checkpoint
// status table from the inventory, then per row its stage strip, timing, hardware,
// command, pictures and evidence links, then the versions) and index.html, a static page
// for browsing the evidence from disk. A merged run (internal/merged) renders its pages
// from its shards' folders with the same sections.
//
// It must not import the harness and vouches for no number itself: every value is a row
// file's as written, which internal/evidencecheck proves and renders again to compare.
// Both pages state their version; older versions still render, for the runs made before.
package prsummary
