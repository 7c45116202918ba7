// Package inventory lists every checkpoint profile of a TRTMC checkout and says, for
// each, whether it belongs to the image-edit qualification group and why.
//
// It owns reading the checkout's data files (tests/e2e/models/*/MODEL.toml, their
// manifests/*.json and website/data/hf-model-metadata.json; in the families layout
// families/*/tests/manifests/*.json, whose TRTMC Tasks internal/trtmc reads against the
// checkout's own task table), the classification of every
// testcase profile (full, partial, gap, variant, out_of_group), the status ladder
// (planned, implemented, family-validated, aiperf-qualified), the reconciliation of the
// group with the rows of qual/, and the rendering of INVENTORY.md and inventory.json.
//
// It must not know about any particular profile: every decision is derived from the
// fields the data carries, and every decision comes with a reason naming those fields.
// It does not run anything and does not import the harness: it only reads files.
package inventory
