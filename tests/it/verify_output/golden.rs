//! What `verify` printed for each case of [`super`], recorded from the command before its
//! report became a typed value (`EVENT_AUDIT_PRINT_GOLDEN=1` prints a run's own).

pub(super) const VERIFY_OUTPUT: &str = r#"
== clean
exit Some(0)
{breaks:[],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:null,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n}
chain intact: # links, # rows, every row rehashed
== mirror
exit Some(0)
{breaks:[],breaks_total:n,duration_ms:n,first_break:null,head_link_seq:n,links:n,mirror:{changed:n,compared:n,database_size:n,differences:[],dir:s,inserted:n,lost:n,mirror_size:n,origin:s,signature_checked:b,trusts:s},ok:b,rows:n,rows_rehashed:n}
chain intact: # links, # rows, every row rehashed
mirror holds: the database's first # leaves are the mirror's (event-audit/DB at size #; its checkpoint NOT checked with a key (no --public-key): the copy is compared as it describes itself, its entries rebuilt into its own root)
== mirror and archive
exit Some(0)
{archive:{dir:s,files:n,named:[],problems:n,rows:n,rows_in_mirror:n,rows_past_mirror:n,rows_pruned:n},breaks:[],breaks_total:n,duration_ms:n,first_break:null,head_link_seq:n,links:n,mirror:{changed:n,compared:n,database_size:n,differences:[],dir:s,inserted:n,lost:n,mirror_size:n,origin:s,signature_checked:b,trusts:s},ok:b,rows:n,rows_rehashed:n}
chain intact: # links, # rows, every row rehashed
mirror holds: the database's first # leaves are the mirror's (event-audit/DB at size #; its checkpoint NOT checked with a key (no --public-key): the copy is compared as it describes itself, its entries rebuilt into its own root)
archive TMP/archive: # files, # rows, every row makes its row hash and matches the log (# of them pruned from the database); # at their leaf index in the mirror's tiles, # past its checkpoint
== archive
exit Some(0)
{archive:{dir:s,files:n,named:[],problems:n,rows:n,rows_in_mirror:null,rows_past_mirror:null,rows_pruned:n},breaks:[],breaks_total:n,duration_ms:n,first_break:null,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n}
chain intact: # links, # rows, every row rehashed
archive TMP/archive: # files, # rows, every row makes its row hash and matches the log (# of them pruned from the database)
== witness with state
exit Some(0)
{auditor_state:{acknowledged:null,open_break:null,path:s,recorded_now:b,run:n},breaks:[],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:null,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:null,first_divergent:null,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain intact: # links, # rows, every row rehashed
witness holds: # checkpoint(s) trusted, up to size #; every row rehashed and the tree rebuilt from all # row hashes
no earlier state: this run's checkpoint is remembered for the next one (keep the state file out of the log operators' reach)
== witness again
exit Some(0)
{auditor_state:{acknowledged:null,open_break:null,path:s,recorded_now:b,run:n},breaks:[],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:null,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:null,first_divergent:null,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain intact: # links, # rows, every row rehashed
witness holds: # checkpoint(s) trusted, up to size #; every row rehashed and the tree rebuilt from all # row hashes
== witness, no state
exit Some(0)
{auditor_state:{acknowledged:null,open_break:null,path:null,recorded_now:b,run:n},breaks:[],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:null,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:null,first_divergent:null,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain intact: # links, # rows, every row rehashed
witness holds: # checkpoint(s) trusted, up to size #; every row rehashed and the tree rebuilt from all # row hashes
--no-state: no state read or written; the next run does not know this one's checkpoint
== witness, mirror, archive
exit Some(0)
{archive:{dir:s,files:n,named:[],problems:n,rows:n,rows_in_mirror:n,rows_past_mirror:n,rows_pruned:n},auditor_state:{acknowledged:null,open_break:null,path:null,recorded_now:b,run:n},breaks:[],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:null,head_link_seq:n,links:n,mirror:{changed:n,compared:n,database_size:n,differences:[],dir:s,inserted:n,lost:n,mirror_size:n,origin:s,signature_checked:b,trusts:s},ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:null,first_divergent:null,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain intact: # links, # rows, every row rehashed
witness holds: # checkpoint(s) trusted, up to size #; every row rehashed and the tree rebuilt from all # row hashes
--no-state: no state read or written; the next run does not know this one's checkpoint
mirror holds: the database's first # leaves are the mirror's (event-audit/DB at size #; its checkpoint's signature checked with the log's key)
archive TMP/archive: # files, # rows, every row makes its row hash and matches the log (# of them pruned from the database); # at their leaf index in the mirror's tiles, # past its checkpoint
== unreadable mirror
exit Some(2)
-
event-audit: could not verify against the mirror: TMP/no-such-mirror: no checkpoint (a mirror's directory holds one per log, under the hex SHA-# of the log's origin; pass the directory `event-audit mirror --dir` wrote, and --public-key to pick the log)
== edited
exit Some(1)
{breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:s,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
== edited, witness, state
exit Some(1)
{auditor_state:{acknowledged:null,open_break:{breaks_total:n,found_at:s,id:s,link:n,run:n,stream:s,stream_seq:n,why:s},path:s,recorded_now:b,run:n},breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:s,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:s,first_divergent:s,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
witness BROKEN: checkpoint size # (stream CPS sequence #): the database's tree at size # has another root (rows changed, added or removed before it)
remembered in TMP/auditor.json: break # found by run # at #-#-#T#:#:#Z: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in that run); every later run exits # naming it until `--acknowledge-break #`
== edited, witness, state again
exit Some(1)
{auditor_state:{acknowledged:null,open_break:{breaks_total:n,found_at:s,id:s,link:n,run:n,stream:s,stream_seq:n,why:s},path:s,recorded_now:b,run:n},breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:s,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:s,first_divergent:s,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
witness BROKEN: checkpoint size # (stream CPS sequence #): the database's tree at size # has another root (rows changed, added or removed before it)
BROKEN (remembered, not acknowledged): break # found by run # at #-#-#T#:#:#Z: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in that run); this run found breaks as well; once it is dealt with, acknowledge it with `--acknowledge-break #`
== edited, witness, no state
exit Some(1)
{auditor_state:{acknowledged:null,open_break:null,path:null,recorded_now:b,run:n},breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:s,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n,witness:{checkpoints:n,evidence:[],first_break:s,first_divergent:s,from_size:n,incremental:b,ok:b,rejected:[],reverdicts_size:n,rows_hashed:n,state_loaded:b,stream_problems:[],trusted:n,witnessed_size:n}}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
witness BROKEN: checkpoint size # (stream CPS sequence #): the database's tree at size # has another root (rows changed, added or removed before it)
--no-state: this break is not remembered for later runs
== edited, mirror
exit Some(1)
{breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}],breaks_total:n,duration_ms:n,first_break:s,head_link_seq:n,links:n,mirror:{changed:n,compared:n,database_size:n,differences:[],dir:s,inserted:n,lost:n,mirror_size:n,origin:s,signature_checked:b,trusts:s},ok:b,rows:n,rows_rehashed:n}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
mirror holds: the database's first # leaves are the mirror's (event-audit/DB at size #; its checkpoint NOT checked with a key (no --public-key): the copy is compared as it describes itself, its entries rebuilt into its own root)
== missing
exit Some(1)
{breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}|{batch:n,link:n,why:s}|{stream:s,stream_seq:n,why:s}],breaks_total:n,completeness:{streams:[{bus:{deleted_count:n,first_seq:n,last_seq:n},gaps:[{from:n,kind:s,to:n}],held:[[n]],stream:s}|{bus:null,gaps:[],held:[[n]],stream:s}]},duration_ms:n,first_break:s,head_link_seq:n,links:n,ok:b,rows:n,rows_rehashed:n}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
== missing, mirror, archive
exit Some(1)
{archive:{dir:s,files:n,named:[],problems:n,rows:n,rows_in_mirror:n,rows_past_mirror:n,rows_pruned:n},breaks:[{batch:n,link:n,stream:s,stream_seq:n,why:s}|{batch:n,link:n,why:s}],breaks_total:n,duration_ms:n,first_break:s,head_link_seq:n,links:n,mirror:{changed:n,compared:n,database_size:n,differences:[{after_row:{stream:s,stream_seq:n},before_row:{stream:s,stream_seq:n},database_entry:null,database_row:null,kind:s,leaf_index:n,mirror_entry:s,mirror_row:null}],dir:s,inserted:n,lost:n,mirror_size:n,origin:s,signature_checked:b,trusts:s},ok:b,rows:n,rows_rehashed:n}
chain BROKEN: row stream=STREAM stream_seq=# (batch #, link #): stored columns do not match the row's hash (row edited) (# break(s) in all; # links, # rows, every row rehashed)
mirror DIFFERS: # changed, # deleted, # inserted of the mirror's # leaves (database tree: #); first: # row deleted at leaf # (between stream=STREAM stream_seq=# and stream=STREAM stream_seq=#); its checkpoint NOT checked with a key (no --public-key): the copy is compared as it describes itself, its entries rebuilt into its own root
archive TMP/archive: # files, # rows, every row makes its row hash and matches the log (# of them pruned from the database); # at their leaf index in the mirror's tiles, # past its checkpoint
"#;
