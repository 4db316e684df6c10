// The -proof mode of tlogcheck: a C2SP tlog-proof (c2sp.org/tlog-proof@v1) checked with Go's
// own code. Its checkpoint is opened with note.Open and the log's key (cosignatures by other
// keys tolerated), and its inclusion proof checked with tlog.CheckRecord for the leaf
// tlog.RecordHash(entry), the entry given in hex (for event-audit, the row hash).
//
//	tlogcheck -proof FILE -entry HEX -key FILE
package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// ProofSummary is what a successful -proof check printed.
type ProofSummary struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	Index  int64  `json:"index"`
}

// checkProof reads the proof file as the spec lays it out and checks it.
func checkProof(proofFile, keyFile, entryHex string) (*ProofSummary, error) {
	verifiers, err := readVerifier(keyFile)
	if err != nil {
		return nil, err
	}
	entry, err := hex.DecodeString(entryHex)
	if err != nil {
		return nil, fmt.Errorf("-entry is not hex: %v", err)
	}
	data, err := os.ReadFile(proofFile)
	if err != nil {
		return nil, err
	}
	const header = "c2sp.org/tlog-proof@v1\n"
	if !strings.HasPrefix(string(data), header) {
		return nil, errors.New("not a tlog-proof: the first line is not c2sp.org/tlog-proof@v1")
	}
	text := string(data)[len(header):]
	head, checkpoint, ok := strings.Cut(text, "\n\n")
	if !ok {
		return nil, errors.New("no empty line before the checkpoint")
	}
	lines := strings.Split(head, "\n")
	if strings.HasPrefix(lines[0], "extra ") {
		lines = lines[1:]
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "index "), 10, 64)
	if err != nil || !strings.HasPrefix(lines[0], "index ") {
		return nil, fmt.Errorf("no index line: %q", lines[0])
	}
	var proof tlog.RecordProof
	for i, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is not 32 bytes of base64", i+1)
		}
		var hash tlog.Hash
		copy(hash[:], h)
		proof = append(proof, hash)
	}
	origin, tree, err := openCheckpoint([]byte(checkpoint), verifiers)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint: %v", err)
	}
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, index, tlog.RecordHash(entry)); err != nil {
		return nil, fmt.Errorf("tlog.CheckRecord: %v", err)
	}
	return &ProofSummary{Origin: origin, Size: tree.N, Index: index}, nil
}
