// Package inventory lists every checkpoint profile of a TRTMC checkout and says, for
// each, whether it belongs to the image-edit qualification group and why.
//
// It reads the checkout's data files (MODEL.toml and manifests at e9132e79, or the
// families layout's manifests), classifies every testcase profile, places it on the
// status ladder, reconciles the group with the qual/ rows, and renders INVENTORY.md and
// inventory.json. It knows no particular profile: every decision is derived from the
// data's fields, with a reason naming them. It only reads files.
package inventory
