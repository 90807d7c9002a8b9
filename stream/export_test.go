package stream

import "unsafe"

// What the external benchmarks (package stream_test, which may import the
// sandbox: the sandbox imports stream) reach of the package's internals.

// GJSONSplitView is gjsonSplitView, for BenchmarkViewReaders.
var GJSONSplitView = gjsonSplitView

// ObjectMembers returns how many of v's members are objects split into
// views of their own.
func ObjectMembers(v *View) int { return len(v.subs) }

// gjsonSplitView is NewView(raw, nil) by gjson's ForEach alone: the
// record's members and its object members' (gjsonView).
func gjsonSplitView(raw []byte) *View {
	v := gjsonView(unsafe.String(unsafe.SliceData(raw), len(raw)), nil)
	for i := range v.members {
		if sub := v.raw(&v.members[i]); isObjectText(sub) {
			v.subs = append(v.subs, subView{i, gjsonView(sub, nil)})
		}
	}
	return v
}
