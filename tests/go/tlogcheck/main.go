// Command tlogcheck checks a C2SP tlog-tiles log with Go's own transparency-log code
// (golang.org/x/mod/sumdb/tlog and sumdb/note), code that event-audit did not write. The
// integration test tests/tiles_interop.rs builds it and runs it against the logs the project
// writes and serves.
//
// Usage:
//
//	tlogcheck -tiles URL_OR_DIR -key FILE [-old FILE]
//	tlogcheck -proof FILE -entry HEX -key FILE   (a C2SP tlog-proof: proof.go)
//
// -tiles is the log's prefix: a base URL (http://127.0.0.1:PORT/log) or a directory.
// -key is the log's verifier key file (one line, "<name>+<hex key id>+<base64(0x01 || key)>").
// -old is an earlier checkpoint of the same log, to be proved consistent with the current one.
//
// What it does:
//
//  1. Fetches <prefix>/checkpoint and opens it with note.Open and the log's key (signature
//     lines by other keys, such as witnesses' cosignatures, are tolerated). The body is a
//     C2SP tlog-checkpoint (origin, size, base64 root), parsed here: tlog.ParseTree reads the
//     go.sum database's own format instead.
//  2. Reads every entry bundle, rebuilds the whole tree from the entries with
//     tlog.StoredHashes, checks its root against the checkpoint's, and compares every hash
//     tile of the tree (full and partial, every level) byte for byte with the tile rebuilt by
//     tlog.ReadTileData. Step 3 alone would not prove every tile: tlog.TileHashReader
//     authenticates only the tiles on the paths it needs, and when several of the tree's
//     subtrees fall in one tile it hashes just the parts it uses, so a tile wrong elsewhere
//     could pass it. This full rebuild is what proves the tiles (and names the first one
//     that differs).
//  3. Reads the tree's hashes through tlog.TileHashReader, mapping Go's tile paths
//     (tile/8/<L>/<N>[.p/<W>], tile/8/data/<N>) onto C2SP's (tile/<L>/<N>[.p/<W>],
//     tile/entries/<N>), computes tlog.TreeHash and compares it with the checkpoint's root,
//     then proves and checks inclusion (ProveRecord/CheckRecord) and consistency
//     (ProveTree/CheckTree) for several leaves and sizes, and for the -old checkpoint.
//
// It prints a one-line JSON summary and exits 0, or prints the first mismatch on stderr and
// exits 1; bad arguments exit 2.
package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// tileHeight is C2SP tlog-tiles' tile height: 256 hashes per full tile.
const tileHeight = 8

// fullWidth is the number of hashes (or entries) in a full tile.
const fullWidth = 1 << tileHeight

func main() {
	tiles := flag.String("tiles", "", "the log's prefix: a base URL or a directory")
	keyFile := flag.String("key", "", "the log's verifier key file")
	oldFile := flag.String("old", "", "an earlier checkpoint to prove consistent (optional)")
	proofFile := flag.String("proof", "", "a C2SP tlog-proof to check with tlog.CheckRecord")
	entry := flag.String("entry", "", "with -proof: the entry it proves, in hex")
	flag.Parse()
	if *proofFile != "" && *keyFile != "" && flag.NArg() == 0 {
		s, err := checkProof(*proofFile, *keyFile, *entry)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tlogcheck: %v\n", err)
			os.Exit(1)
		}
		line, _ := json.Marshal(s)
		fmt.Println(string(line))
		return
	}
	if *tiles == "" || *keyFile == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: tlogcheck -tiles URL_OR_DIR -key FILE [-old FILE]")
		os.Exit(2)
	}
	summary, err := check(newSource(*tiles), *keyFile, *oldFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tlogcheck: %v\n", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(summary)
	fmt.Println(string(line))
}

// Summary is what a successful check printed.
type Summary struct {
	Origin            string `json:"origin"`
	Size              int64  `json:"size"`
	RootOK            bool   `json:"root_ok"`
	TilesCompared     int    `json:"tiles_compared"`
	BundlesRead       int    `json:"bundles_read"`
	InclusionProofs   int    `json:"inclusion_proofs"`
	ConsistencyProofs int    `json:"consistency_proofs"`
	OldSize           int64  `json:"old_size"`
	OldConsistent     bool   `json:"old_consistent"`
}

// check runs the three steps of the header comment.
func check(src *source, keyFile, oldFile string) (*Summary, error) {
	verifiers, err := readVerifier(keyFile)
	if err != nil {
		return nil, err
	}
	text, err := src.get("checkpoint")
	if err != nil {
		return nil, err
	}
	origin, tree, err := openCheckpoint(text, verifiers)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", src.where("checkpoint"), err)
	}
	s := &Summary{Origin: origin, Size: tree.N}
	if tree.N == 0 {
		// Go's tlog hashes the empty tree as all zeros, RFC 6962 as SHA-256 of nothing; an
		// empty log has no tiles to check.
		if tree.Hash != tlog.Hash(sha256.Sum256(nil)) {
			return nil, errors.New("the empty tree's root is not SHA-256 of the empty string")
		}
		s.RootOK = true
		if oldFile != "" {
			// Only an empty tree is a prefix of the empty tree: no proof is read.
			return s, proveOld(oldFile, origin, verifiers, tree, nil, s)
		}
		return s, nil
	}
	if err := rebuildAndCompare(src, tree, s); err != nil {
		return nil, err
	}
	reader := &tileReader{src: src}
	hr := tlog.TileHashReader(tree, reader)
	root, err := tlog.TreeHash(tree.N, hr)
	if err != nil {
		return nil, fmt.Errorf("tree hash through the tiles: %v", err)
	}
	if root != tree.Hash {
		return nil, fmt.Errorf("the tiles' root %v is not the checkpoint's %v", root, tree.Hash)
	}
	s.RootOK = true
	if err := proveAll(tree, hr, s); err != nil {
		return nil, err
	}
	if oldFile != "" {
		if err := proveOld(oldFile, origin, verifiers, tree, hr, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readVerifier reads the log's key file into a verifier list.
func readVerifier(keyFile string) (note.Verifiers, error) {
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("the key file: %v", err)
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(key)))
	if err != nil {
		return nil, fmt.Errorf("the key in %s: %v", keyFile, err)
	}
	return note.VerifierList(v), nil
}

// openCheckpoint verifies the log's signature on a checkpoint note and parses its C2SP body:
// origin, decimal size, base64 root, then optional extension lines.
func openCheckpoint(text []byte, verifiers note.Verifiers) (string, tlog.Tree, error) {
	// note.Open skips signatures by unknown keys (cosignatures) and fails with
	// UnverifiedNoteError only when no known key signed.
	n, err := note.Open(text, verifiers)
	if err != nil {
		return "", tlog.Tree{}, fmt.Errorf("the checkpoint does not open with the log's key: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] == "" {
		return "", tlog.Tree{}, errors.New("the checkpoint body is not origin, size, root")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return "", tlog.Tree{}, fmt.Errorf("the checkpoint size %q is not a decimal number", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return "", tlog.Tree{}, fmt.Errorf("the checkpoint root %q is not 32 bytes of base64", lines[2])
	}
	var root tlog.Hash
	copy(root[:], raw)
	return lines[0], tlog.Tree{N: size, Hash: root}, nil
}

// proveAll proves and checks inclusion of several leaves and consistency from several sizes,
// all through the tiles.
func proveAll(tree tlog.Tree, hr tlog.HashReader, s *Summary) error {
	for _, i := range sample(tree.N) {
		if i >= tree.N {
			continue
		}
		if err := proveLeaf(tree, hr, i); err != nil {
			return err
		}
		s.InclusionProofs++
	}
	for _, m := range sample(tree.N) {
		if m == 0 || m >= tree.N {
			continue
		}
		old, err := tlog.TreeHash(m, hr)
		if err != nil {
			return fmt.Errorf("the root of size %d through the tiles: %v", m, err)
		}
		if err := proveConsistent(tree, m, old, hr); err != nil {
			return err
		}
		s.ConsistencyProofs++
	}
	return nil
}

// sample is the leaf indexes and sizes the proofs are made for: the edges of the tree and
// of its tiles, and a few within.
func sample(n int64) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, i := range []int64{0, 1, 2, 3, 7, 254, 255, 256, 257, 511, 512, 65535, 65536,
		65537, n / 3, n / 2, n - 2, n - 1} {
		if i >= 0 && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// proveLeaf checks leaf i's inclusion: its hash is read from the tree, the proof made and
// checked against the root.
func proveLeaf(tree tlog.Tree, hr tlog.HashReader, i int64) error {
	leaf, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
	if err != nil {
		return fmt.Errorf("leaf %d through the tiles: %v", i, err)
	}
	p, err := tlog.ProveRecord(tree.N, i, hr)
	if err != nil {
		return fmt.Errorf("inclusion proof of leaf %d in size %d: %v", i, tree.N, err)
	}
	if err := tlog.CheckRecord(p, tree.N, tree.Hash, i, leaf[0]); err != nil {
		return fmt.Errorf("inclusion proof of leaf %d in size %d does not check: %v", i, tree.N, err)
	}
	return nil
}

// proveConsistent checks that the tree of size m with root old is a prefix of tree.
func proveConsistent(tree tlog.Tree, m int64, old tlog.Hash, hr tlog.HashReader) error {
	p, err := tlog.ProveTree(tree.N, m, hr)
	if err != nil {
		return fmt.Errorf("consistency proof from size %d to %d: %v", m, tree.N, err)
	}
	if err := tlog.CheckTree(p, tree.N, tree.Hash, m, old); err != nil {
		return fmt.Errorf("size %d is not consistent with size %d: %v", m, tree.N, err)
	}
	return nil
}

// proveOld checks an earlier checkpoint of the same log against the current one.
func proveOld(file, origin string, verifiers note.Verifiers, tree tlog.Tree, hr tlog.HashReader, s *Summary) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("the old checkpoint: %v", err)
	}
	oldOrigin, old, err := openCheckpoint(text, verifiers)
	if err != nil {
		return fmt.Errorf("the old checkpoint %s: %v", file, err)
	}
	if oldOrigin != origin || old.N > tree.N {
		return fmt.Errorf("the old checkpoint (%s, size %d) is not an earlier one of %s (size %d)",
			oldOrigin, old.N, origin, tree.N)
	}
	s.OldSize = old.N
	switch {
	case old.N == tree.N && old.Hash != tree.Hash:
		return fmt.Errorf("the old checkpoint has size %d and another root", old.N)
	case old.N > 0 && old.N < tree.N:
		if err := proveConsistent(tree, old.N, old.Hash, hr); err != nil {
			return err
		}
		s.ConsistencyProofs++
	}
	s.OldConsistent = true
	return nil
}

// rebuildAndCompare reads every entry bundle, rebuilds the tree's stored hashes from the
// entries, checks the rebuilt root, and compares every hash tile with the rebuilt one.
func rebuildAndCompare(src *source, tree tlog.Tree, s *Summary) error {
	var stored []tlog.Hash
	own := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("stored hash %d is not built yet", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for n := int64(0); n*fullWidth < tree.N; n++ {
		t := tileAt(-1, n, tree.N)
		entries, err := readBundle(src, t)
		if err != nil {
			return err
		}
		for i, e := range entries {
			hashes, err := tlog.StoredHashes(n*fullWidth+int64(i), e, own)
			if err != nil {
				return err
			}
			stored = append(stored, hashes...)
		}
		s.BundlesRead++
	}
	root, err := tlog.TreeHash(tree.N, own)
	if err != nil || root != tree.Hash {
		return fmt.Errorf("the entries' tree hashes to %v, not the checkpoint's root %v (%v)", root, tree.Hash, err)
	}
	for level := 0; tree.N>>(tileHeight*uint(level)) > 0; level++ {
		count := tree.N >> (tileHeight * uint(level))
		for n := int64(0); n*fullWidth < count; n++ {
			if err := compareTile(src, tileAt(level, n, tree.N), own); err != nil {
				return err
			}
			s.TilesCompared++
		}
	}
	return nil
}

// tileAt is the n-th tile of a level (-1 for the entry bundles) in a tree of size: full, or
// partial with the width the size leaves.
func tileAt(level int, n, size int64) tlog.Tile {
	shift := uint(0)
	if level > 0 {
		shift = tileHeight * uint(level)
	}
	count := size >> shift
	w := count - n*fullWidth
	if w > fullWidth {
		w = fullWidth
	}
	return tlog.Tile{H: tileHeight, L: level, N: n, W: int(w)}
}

// compareTile compares a served hash tile with the one rebuilt from the entries.
func compareTile(src *source, t tlog.Tile, own tlog.HashReader) error {
	want, err := tlog.ReadTileData(t, own)
	if err != nil {
		return fmt.Errorf("rebuilding %s: %v", c2spPath(t), err)
	}
	got, err := src.get(c2spPath(t))
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s has %d bytes, the tree's tile %d", src.where(c2spPath(t)), len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s differs from the tree's tile at byte %d (hash %d)",
				src.where(c2spPath(t)), i, i/tlog.HashSize)
		}
	}
	return nil
}

// readBundle reads an entry bundle: big-endian uint16 length-prefixed entries, exactly as
// many as the tile's width.
func readBundle(src *source, t tlog.Tile) ([][]byte, error) {
	data, err := src.get(c2spPath(t))
	if err != nil {
		return nil, err
	}
	var entries [][]byte
	for rest := data; len(rest) > 0; {
		if len(rest) < 2 {
			return nil, fmt.Errorf("%s ends inside a length prefix", src.where(c2spPath(t)))
		}
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return nil, fmt.Errorf("%s ends inside entry %d", src.where(c2spPath(t)), len(entries))
		}
		entries = append(entries, rest[2:2+n])
		rest = rest[2+n:]
	}
	if len(entries) != t.W {
		return nil, fmt.Errorf("%s holds %d entries, its width is %d", src.where(c2spPath(t)), len(entries), t.W)
	}
	return entries, nil
}

// c2spPath maps a Go tile path onto C2SP's: tile/8/<L>/... becomes tile/<L>/..., and
// tile/8/data/... (the records) becomes tile/entries/....
func c2spPath(t tlog.Tile) string {
	rest := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", tileHeight))
	if strings.HasPrefix(rest, "data/") {
		rest = "entries/" + strings.TrimPrefix(rest, "data/")
	}
	return "tile/" + rest
}

// tileReader serves Go's tlog.TileHashReader from the log's C2SP tiles.
type tileReader struct {
	src *source
}

func (r *tileReader) Height() int { return tileHeight }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := r.src.get(c2spPath(t))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

// SaveTiles is where a client would keep tiles once authenticated; this check keeps none.
func (r *tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

// source is where the log is read from: a base URL or a directory. Each path is read once.
type source struct {
	base   string
	isURL  bool
	client *http.Client
	cache  map[string][]byte
}

func newSource(base string) *source {
	isURL := strings.HasPrefix(base, "http://") || strings.HasPrefix(base, "https://")
	return &source{
		base:   strings.TrimSuffix(base, "/"),
		isURL:  isURL,
		client: &http.Client{Timeout: 10 * time.Second},
		cache:  map[string][]byte{},
	}
}

// where is the URL or file of a path, for messages.
func (s *source) where(path string) string {
	if s.isURL {
		return s.base + "/" + path
	}
	return filepath.Join(s.base, filepath.FromSlash(path))
}

// get reads a path under the log's prefix.
func (s *source) get(path string) ([]byte, error) {
	if data, ok := s.cache[path]; ok {
		return data, nil
	}
	var data []byte
	var err error
	if s.isURL {
		data, err = s.fetch(path)
	} else {
		data, err = os.ReadFile(s.where(path))
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", s.where(path), err)
	}
	s.cache[path] = data
	return data, nil
}

// fetch GETs a path, expecting 200.
func (s *source) fetch(path string) ([]byte, error) {
	resp, err := s.client.Get(s.where(path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}
