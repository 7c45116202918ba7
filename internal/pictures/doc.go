// Package pictures draws what a reviewer looks at first: a contact sheet per row
// (reference image, instruction, HTTP output, native output, and a diff heat map where
// the two outputs differ) and a latency chart (client latency and Task time per
// request, warmup marked).
//
// Callers hand it bytes and numbers; it reads no evidence. Output is the same to the
// pixel on every platform, so the checker can re-render a picture and require it
// identical: nearest-neighbour scaling, a bitmap font, and a bar's height one float
// multiply and one divide (no fusable multiply-add, no math library call).
package pictures
