//go:build !unix

package spool

import "io/fs"

// ownedByUs reports whether fi belongs to this process's user; without Unix
// owners the folder's mode is the only check.
func ownedByUs(fs.FileInfo) bool { return true }
