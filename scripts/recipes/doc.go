// Package recipes holds the README's command blocks as scripts (README.md here): its
// tests hold each block to its script and run the scripts.
package recipes
