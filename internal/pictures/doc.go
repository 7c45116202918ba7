// Package pictures draws what a reviewer looks at first: a contact sheet per row
// (reference image, instruction, HTTP output, native output, and a diff heat map where
// the two outputs differ) and a latency chart (client latency and Task time per
// request, warmup marked).
//
// It owns the drawing and nothing else: callers hand it bytes and numbers, and it
// never reads an evidence folder, never parses AIPerf, and must not import the harness
// (the harness calls it). Output is deterministic to the pixel on every platform, so a checker
// can re-render a picture from the raw evidence and require it to be identical: scaling
// is golang.org/x/image/draw's nearest-neighbour (integer), text is the bitmap font
// golang.org/x/image/font/basicfont, and a bar's height is one float multiply and one
// divide (IEEE 754 rounds each the same everywhere; no multiply-add that a compiler
// could fuse, no math library call).
package pictures
