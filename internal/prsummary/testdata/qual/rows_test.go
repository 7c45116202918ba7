// Package qual is a stand-in for the repository's qual/ tables in the PR summary's
// golden test: the inventory reads rows by their Profile: literal, nothing else.
package qual

type checkpoint struct{ Name, Family, Profile string }

var rows = []checkpoint{
	{Name: "refedit-v1", Family: "refedit", Profile: "refedit-v1"},
	{Name: "qwen-image-edit-2511", Family: "trtmc", Profile: "qwen-image-edit-2511"},
}
