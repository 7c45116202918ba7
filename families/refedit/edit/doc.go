// Package edit is the refedit editor: the bundle format (the compiled edit program),
// settings parsing shared by the HTTP server and the CLI, instruction matching, and the
// pixel pipeline (decode, resize, edit, guidance blend, quantize, PNG encode).
//
// It owns every number the edits use, but only through the bundle: the built-in values
// live in the builder (builder.go) and the apply path reads them from a loaded Program.
// It knows nothing about HTTP, flags or files other than the bundle it loads.
package edit
