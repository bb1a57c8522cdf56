// cuckood through go-redis v9's CF* commands, in RESP2 and RESP3 (go-redis's default).
// Run by scripts/compat.sh go, which starts the server and sets CUCKOOD_PORT.
// Expected values are RedisBloom 2.8's (/work/shared/redisbloom-cf-reference.md).
//
// go-redis notes: CFAdd/CFExists/CFDel/CFMExists/CFInsert read 1/0 (RESP2) and #t/#f (RESP3)
// into bools, so wire types are checked with raw Do() calls. CFReserveWithArgs leaves out any
// option that is 0, so EXPANSION 0 needs CFReserveExpansion. CFScanDump reports the end of a
// dump ([0, nil]) as the error redis.Nil. There is no CFCompact / CFDebug: Do() is used.
package compat

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

var ctx = context.Background()

// address is where scripts/compat.sh started this suite's server ("" when it did not).
func address() string {
	port := os.Getenv("CUCKOOD_PORT")
	if port == "" {
		return ""
	}
	host := os.Getenv("CUCKOOD_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	return host + ":" + port
}

func addr(t *testing.T) string {
	a := address()
	if a == "" {
		t.Fatal("CUCKOOD_PORT must name the server started by scripts/compat.sh")
	}
	return a
}

type env struct {
	c     *redis.Client
	proto int
	name  string
}

func (e env) key(s string) string { return fmt.Sprintf("go:%s:%d:%s", e.name, e.proto, s) }

func (e env) debug(t *testing.T, key string) string {
	t.Helper()
	s, err := e.c.Do(ctx, "CF.DEBUG", key).Text()
	ok(t, err)
	return s
}

// each runs body once per protocol with a client of its own.
func each(t *testing.T, body func(t *testing.T, e env)) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr(t), Protocol: proto,
				ReadTimeout: 30 * time.Second, PoolSize: 8})
			defer c.Close()
			body(t, env{c: c, proto: proto, name: t.Name()})
		})
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func eq(t *testing.T, got, want interface{}) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

// fails checks that err is a server error reply with exactly this text.
func fails(t *testing.T, err error, text string) {
	t.Helper()
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		t.Fatalf("want server error %q, got %v", text, err)
	}
	eq(t, err.Error(), text)
}

// flag is what Do() returns for a RedisBloom yes/no reply.
func flag(proto int, v bool) interface{} {
	if proto == 3 {
		return v
	}
	if v {
		return int64(1)
	}
	return int64(0)
}

// TestMain empties the suite's own server once, so that a rerun starts clean.
func TestMain(m *testing.M) {
	if a := address(); a != "" {
		c := redis.NewClient(&redis.Options{Addr: a})
		if err := c.FlushAll(ctx).Err(); err != nil {
			fmt.Fprintln(os.Stderr, "FLUSHALL:", err)
			os.Exit(1)
		}
		c.Close()
	}
	os.Exit(m.Run())
}

func TestHelloProtocol(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		// the client negotiated its protocol with HELLO: the reply shape tells which
		v, err := e.c.Do(ctx, "CF.ADD", e.key("k"), "a").Result()
		ok(t, err)
		eq(t, v, flag(e.proto, true))
	})
}

func TestCFReserve(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		eq(t, e.c.CFReserve(ctx, e.key("a"), 1000).Val(), "OK")
		info, err := e.c.CFInfo(ctx, e.key("a")).Result()
		ok(t, err)
		eq(t, info, redis.CFInfo{Size: 1080, NumBuckets: 512, NumFilters: 1, BucketSize: 2,
			ExpansionRate: 1, MaxIteration: 20})
		ok(t, e.c.CFReserveWithArgs(ctx, e.key("b"), &redis.CFReserveOptions{
			Capacity: 1000, BucketSize: 4, MaxIterations: 50, Expansion: 3}).Err())
		eq(t, e.debug(t, e.key("b")),
			"bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:50 expansion:4")
		ok(t, e.c.CFReserveExpansion(ctx, e.key("c"), 64, 0).Err())
		ok(t, e.c.CFReserveBucketSize(ctx, e.key("d"), 10, 1).Err())
		ok(t, e.c.CFReserveMaxIterations(ctx, e.key("e"), 100, 65535).Err())
		eq(t, e.debug(t, e.key("c")),
			"bktsize:2 buckets:32 items:0 deletes:0 filters:1 max_iterations:20 expansion:0")
		eq(t, e.debug(t, e.key("d")),
			"bktsize:1 buckets:16 items:0 deletes:0 filters:1 max_iterations:20 expansion:1")
		eq(t, e.debug(t, e.key("e")),
			"bktsize:2 buckets:64 items:0 deletes:0 filters:1 max_iterations:65535 expansion:1")
		eq(t, e.c.Type(ctx, e.key("a")).Val(), "MBbloomCF")

		fails(t, e.c.CFReserve(ctx, e.key("a"), 1000).Err(), "ERR item exists")
		fails(t, e.c.CFReserve(ctx, e.key("x"), 1).Err(), "Capacity must be at least (BucketSize * 2)")
		fails(t, e.c.CFReserveBucketSize(ctx, e.key("x"), 100, 256).Err(),
			"BUCKETSIZE: value must be an integer between 1 and 255, inclusive.")
		fails(t, e.c.CFReserveMaxIterations(ctx, e.key("x"), 100, -1).Err(),
			"MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.")
		fails(t, e.c.CFReserveExpansion(ctx, e.key("x"), 100, 32769).Err(),
			"EXPANSION: value must be an integer between 0 and 32768, inclusive.")
		fails(t, e.c.Do(ctx, "CF.RESERVE", e.key("x"), "ten").Err(), "Bad capacity")
		ok(t, e.c.Set(ctx, e.key("str"), "x", 0).Err())
		fails(t, e.c.CFReserve(ctx, e.key("str"), 100).Err(), wrongType)
		eq(t, e.c.Exists(ctx, e.key("x")).Val(), int64(0))
	})
}

func TestCFAddAddNX(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		k := e.key("k")
		eq(t, e.c.CFAdd(ctx, k, "a").Val(), true) // auto-creates with the defaults
		eq(t, e.c.CFAdd(ctx, k, "a").Val(), true) // another copy
		eq(t, e.c.CFCount(ctx, k, "a").Val(), int64(2))
		added, err := e.c.CFAddNX(ctx, k, "a").Result()
		ok(t, err)
		eq(t, added, false)
		eq(t, e.c.CFAddNX(ctx, k, "b").Val(), true)
		eq(t, e.c.CFAddNX(ctx, k, []byte{0, 0xff, '\r', '\n'}).Val(), true)
		eq(t, e.c.CFExists(ctx, k, []byte{0, 0xff, '\r', '\n'}).Val(), true)
		eq(t, e.c.CFAddNX(ctx, k, "").Val(), true) // the empty item
		eq(t, e.c.CFInfo(ctx, k).Val(), redis.CFInfo{Size: 1080, NumBuckets: 512, NumFilters: 1,
			NumItemsInserted: 5, BucketSize: 2, ExpansionRate: 1, MaxIteration: 20})
		eq(t, e.c.Do(ctx, "CF.ADDNX", k, "b").Val(), flag(e.proto, false))
		eq(t, e.c.Do(ctx, "CF.ADD", k, "c").Val(), flag(e.proto, true))
		ok(t, e.c.Set(ctx, e.key("str"), "x", 0).Err())
		fails(t, e.c.CFAdd(ctx, e.key("str"), "a").Err(), wrongType)
		fails(t, e.c.CFAddNX(ctx, e.key("str"), "a").Err(), wrongType)

		ok(t, e.c.CFReserveExpansion(ctx, e.key("full"), 4, 0).Err())
		for _, item := range []string{"1", "2", "3", "4"} {
			eq(t, e.c.CFAdd(ctx, e.key("full"), item).Val(), true)
		}
		fails(t, e.c.CFAdd(ctx, e.key("full"), "5").Err(), "Filter is full")

		ok(t, e.c.CFReserve(ctx, e.key("max"), 4).Err())
		cmds, err := e.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < 124; i++ {
				p.CFAdd(ctx, e.key("max"), i)
			}
			return nil
		})
		ok(t, err)
		for _, cmd := range cmds {
			eq(t, cmd.(*redis.BoolCmd).Val(), true)
		}
		eq(t, e.c.CFInfo(ctx, e.key("max")).Val().NumFilters, int64(32))
		fails(t, e.c.CFAdd(ctx, e.key("max"), "2048").Err(), "Maximum expansions reached")
		fails(t, e.c.CFAddNX(ctx, e.key("max"), "0").Err(), "Maximum expansions reached")
	})
}

func TestCFInsert(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		got, err := e.c.CFInsert(ctx, e.key("a"), nil, "x", "y", "z").Result()
		ok(t, err)
		eq(t, got, []bool{true, true, true})
		eq(t, e.debug(t, e.key("a")),
			"bktsize:2 buckets:512 items:3 deletes:0 filters:1 max_iterations:20 expansion:1")
		eq(t, e.c.CFInsert(ctx, e.key("b"), &redis.CFInsertOptions{Capacity: 10000}, "x").Val(),
			[]bool{true})
		eq(t, e.debug(t, e.key("b")),
			"bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")
		eq(t, e.c.CFInsert(ctx, e.key("b"), &redis.CFInsertOptions{Capacity: 10, NoCreate: true},
			"w").Val(), []bool{true})
		fails(t, e.c.CFInsert(ctx, e.key("missing"), &redis.CFInsertOptions{NoCreate: true},
			"x").Err(), "ERR not found")
		eq(t, e.c.Exists(ctx, e.key("missing")).Val(), int64(0))
		fails(t, e.c.CFInsert(ctx, e.key("c"), &redis.CFInsertOptions{Capacity: 3}, "x").Err(),
			"Capacity must be at least (BucketSize * 2)")
		fails(t, e.c.CFInsert(ctx, e.key("c"), nil).Err(),
			"ERR wrong number of arguments for 'cf.insert' command")
		fails(t, e.c.Do(ctx, "CF.INSERT", e.key("c"), "FOO", "ITEMS", "a").Err(),
			"Unknown argument received")

		// a full filter: :-1 in RESP2, #f in RESP3; the client reads both as false
		ok(t, e.c.CFReserveWithArgs(ctx, e.key("full"), &redis.CFReserveOptions{
			Capacity: 2, BucketSize: 1}).Err())
		ok(t, e.c.Do(ctx, "CF.RESERVE", e.key("full0"), 2, "BUCKETSIZE", 1, "EXPANSION", 0).Err())
		eq(t, e.c.CFInsert(ctx, e.key("full0"), nil, "1", "1", "1", "1").Val(),
			[]bool{true, true, false, false})
		raw, err := e.c.Do(ctx, "CF.INSERT", e.key("full0"), "ITEMS", "1").Result()
		ok(t, err)
		if e.proto == 3 {
			eq(t, raw, []interface{}{false})
		} else {
			eq(t, raw, []interface{}{int64(-1)})
		}
		// with growth the same inserts all succeed
		eq(t, e.c.CFInsert(ctx, e.key("full"), nil, "1", "1", "1", "1").Val(),
			[]bool{true, true, true, true})
		eq(t, e.c.CFInfo(ctx, e.key("full")).Val().NumFilters, int64(2))
	})
}

func TestCFInsertNX(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		got, err := e.c.CFInsertNX(ctx, e.key("a"), nil, "a", "b", "a").Result()
		ok(t, err)
		eq(t, got, []int64{1, 1, 0}) // integers in RESP3 too
		eq(t, e.c.CFInsertNX(ctx, e.key("a"), nil, "b", "c").Val(), []int64{0, 1})
		eq(t, e.c.CFInsertNX(ctx, e.key("b"), &redis.CFInsertOptions{Capacity: 100}, "a").Val(),
			[]int64{1})
		eq(t, e.debug(t, e.key("b")),
			"bktsize:2 buckets:64 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")
		fails(t, e.c.CFInsertNX(ctx, e.key("missing"), &redis.CFInsertOptions{NoCreate: true},
			"a").Err(), "ERR not found")
		ok(t, e.c.Do(ctx, "CF.RESERVE", e.key("full"), 2, "BUCKETSIZE", 1, "EXPANSION", 0).Err())
		// "1" fills both slots of its two buckets; "2" finds no room: -1 (integers in RESP3 too)
		eq(t, e.c.CFInsert(ctx, e.key("full"), nil, "1", "1").Val(), []bool{true, true})
		eq(t, e.c.CFInsertNX(ctx, e.key("full"), nil, "1", "2").Val(), []int64{0, -1})
	})
}

func TestCFExistsMExistsCount(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		k := e.key("k")
		ok(t, e.c.CFInsert(ctx, k, nil, "a", "b", "b").Err())
		eq(t, e.c.CFExists(ctx, k, "a").Val(), true)
		exists, err := e.c.CFExists(ctx, k, "nope").Result()
		ok(t, err)
		eq(t, exists, false)
		eq(t, e.c.CFMExists(ctx, k, "a", "nope", "b").Val(), []bool{true, false, true})
		eq(t, e.c.CFExists(ctx, e.key("missing"), "a").Val(), false)
		eq(t, e.c.CFMExists(ctx, e.key("missing"), "a", "b").Val(), []bool{false, false})
		ok(t, e.c.Set(ctx, e.key("str"), "x", 0).Err()) // another type answers "no"
		eq(t, e.c.CFExists(ctx, e.key("str"), "a").Val(), false)
		eq(t, e.c.Do(ctx, "CF.MEXISTS", k, "a", "nope").Val(),
			[]interface{}{flag(e.proto, true), flag(e.proto, false)})
		eq(t, e.c.Do(ctx, "CF.EXISTS", k, "b").Val(), flag(e.proto, true))

		eq(t, e.c.CFCount(ctx, k, "b").Val(), int64(2))
		eq(t, e.c.CFCount(ctx, k, "nope").Val(), int64(0))
		eq(t, e.c.CFCount(ctx, e.key("missing"), "a").Val(), int64(0))
		eq(t, e.c.Do(ctx, "CF.COUNT", k, "a").Val(), int64(1)) // an integer in RESP3 too
		ok(t, e.c.CFReserve(ctx, e.key("tiny"), 4).Err())      // both candidates one bucket
		ok(t, e.c.CFAdd(ctx, e.key("tiny"), "a").Err())
		eq(t, e.c.CFCount(ctx, e.key("tiny"), "a").Val(), int64(2))
	})
}

func TestCFDel(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		k := e.key("k")
		ok(t, e.c.CFAdd(ctx, k, "a").Err())
		ok(t, e.c.CFAdd(ctx, k, "a").Err())
		eq(t, e.c.CFDel(ctx, k, "a").Val(), true)
		eq(t, e.c.CFCount(ctx, k, "a").Val(), int64(1))
		eq(t, e.c.CFDel(ctx, k, "a").Val(), true)
		deleted, err := e.c.CFDel(ctx, k, "a").Result()
		ok(t, err)
		eq(t, deleted, false)
		eq(t, e.c.Do(ctx, "CF.DEL", k, "a").Val(), flag(e.proto, false))
		info := e.c.CFInfo(ctx, k).Val()
		eq(t, []int64{info.NumItemsInserted, info.NumItemsDeleted}, []int64{0, 2})
		fails(t, e.c.CFDel(ctx, e.key("missing"), "a").Err(), "Not found")
		ok(t, e.c.Set(ctx, e.key("str"), "x", 0).Err())
		fails(t, e.c.CFDel(ctx, e.key("str"), "a").Err(), "Not found")
	})
}

func TestCFInfo(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		k := e.key("k")
		ok(t, e.c.CFReserveExpansion(ctx, k, 9, 0).Err())
		ok(t, e.c.CFInsert(ctx, k, nil, "3", "4", "4", "5").Err())
		ok(t, e.c.CFDel(ctx, k, "3").Err())
		info, err := e.c.CFInfo(ctx, k).Result()
		ok(t, err)
		eq(t, info, redis.CFInfo{Size: 64, NumBuckets: 4, NumFilters: 1, NumItemsInserted: 3,
			NumItemsDeleted: 1, BucketSize: 2, ExpansionRate: 0, MaxIteration: 20})
		raw, err := e.c.Do(ctx, "CF.INFO", k).Result()
		ok(t, err)
		names := []string{"Size", "Number of buckets", "Number of filters",
			"Number of items inserted", "Number of items deleted", "Bucket size",
			"Expansion rate", "Max iterations"}
		values := []int64{64, 4, 1, 3, 1, 2, 0, 20}
		if e.proto == 3 {
			m := map[interface{}]interface{}{}
			for i, n := range names {
				m[n] = values[i]
			}
			eq(t, raw, m) // a map
		} else {
			var flat []interface{}
			for i, n := range names {
				flat = append(flat, n, values[i])
			}
			eq(t, raw, flat) // a flat array, in RedisBloom's order
		}
		fails(t, e.c.CFInfo(ctx, e.key("missing")).Err(), "ERR not found")
		ok(t, e.c.Set(ctx, e.key("str"), "x", 0).Err())
		fails(t, e.c.CFInfo(ctx, e.key("str")).Err(), wrongType)
	})
}

type chunk struct {
	iter int64
	data string
}

func dump(t *testing.T, c *redis.Client, key string) []chunk {
	t.Helper()
	var out []chunk
	var iter int64
	for {
		d, err := c.CFScanDump(ctx, key, iter).Result()
		if err == redis.Nil { // [0, nil]: the end
			return out
		}
		ok(t, err)
		if d.Iter == 0 {
			t.Fatalf("iterator 0 with data %q", d.Data)
		}
		out = append(out, chunk{d.Iter, d.Data})
		iter = d.Iter
	}
}

func TestCFScanDumpLoadChunk(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		src, dst := e.key("src"), e.key("dst")
		ok(t, e.c.CFReserveExpansion(ctx, src, 100, 2).Err())
		var items []interface{}
		for i := 0; i < 500; i++ {
			items = append(items, fmt.Sprintf("item%d", i))
		}
		for i := 0; i < 500; i += 100 {
			ok(t, e.c.CFInsert(ctx, src, nil, items[i:i+100]...).Err())
		}
		ok(t, e.c.CFDel(ctx, src, "item0").Err())
		chunks := dump(t, e.c, src)
		eq(t, len(chunks), 4)
		h := []byte(chunks[0].data)
		eq(t, chunks[0].iter, int64(1))
		eq(t, len(h), 38)
		le := binary.LittleEndian
		eq(t, []uint64{le.Uint64(h[0:]), le.Uint64(h[8:]), le.Uint64(h[16:]), le.Uint64(h[24:]),
			uint64(le.Uint16(h[32:])), uint64(le.Uint16(h[34:])), uint64(le.Uint16(h[36:]))},
			[]uint64{499, 64, 1, 3, 2, 20, 2})
		eq(t, []int64{chunks[1].iter, chunks[2].iter, chunks[3].iter}, []int64{129, 385, 897})
		eq(t, []int{len(chunks[1].data), len(chunks[2].data), len(chunks[3].data)},
			[]int{128, 256, 512})
		for _, ch := range chunks {
			eq(t, e.c.CFLoadChunk(ctx, dst, ch.iter, ch.data).Val(), "OK")
		}
		eq(t, e.c.CFInfo(ctx, dst).Val(), e.c.CFInfo(ctx, src).Val())
		eq(t, e.debug(t, dst), e.debug(t, src))
		want := make([]bool, 500)
		for i := 1; i < 500; i++ {
			want[i] = true
		}
		eq(t, e.c.CFMExists(ctx, dst, items...).Val(), want)
		eq(t, dump(t, e.c, dst), chunks)
		eq(t, e.c.CFAdd(ctx, dst, "new").Val(), true) // the copy is a filter of its own
		eq(t, e.c.CFExists(ctx, src, "new").Val(), false)

		// the raw reply of the end of a dump, and an empty filter
		ok(t, e.c.CFReserve(ctx, e.key("empty"), 62).Err())
		eq(t, e.c.Do(ctx, "CF.SCANDUMP", e.key("empty"), 0).Val(), []interface{}{int64(0), nil})
		eq(t, e.c.CFScanDump(ctx, e.key("empty"), 0).Err(), redis.Nil)

		// errors
		fails(t, e.c.CFScanDump(ctx, e.key("missing"), 0).Err(), "ERR not found")
		fails(t, e.c.CFScanDump(ctx, src, -1).Err(), "Invalid position")
		fails(t, e.c.CFLoadChunk(ctx, src, 1, chunks[0].data).Err(), "ERR item exists")
		fails(t, e.c.CFLoadChunk(ctx, e.key("new"), 1, chunks[0].data[:37]).Err(), "Invalid header")
		fails(t, e.c.CFLoadChunk(ctx, e.key("new"), 0, "x").Err(), "Invalid position")
		fails(t, e.c.CFLoadChunk(ctx, e.key("new"), 1, make([]byte, 38)).Err(),
			"Couldn't create filter!")
		fails(t, e.c.CFLoadChunk(ctx, src, 1<<20, make([]byte, 8)).Err(), "Couldn't load chunk!")
		eq(t, e.c.Exists(ctx, e.key("new")).Val(), int64(0))
	})
}

func TestCFCompactDebugRaw(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		k := e.key("k")
		ok(t, e.c.CFReserveMaxIterations(ctx, k, 8, 50).Err())
		var items []interface{}
		for i := 0; i < 100; i++ {
			items = append(items, i)
		}
		ok(t, e.c.CFInsert(ctx, k, nil, items...).Err())
		want := "bktsize:2 buckets:4 items:100 deletes:0 filters:13 max_iterations:50 expansion:1"
		eq(t, e.debug(t, k), want)
		eq(t, e.c.Do(ctx, "CF.COMPACT", k).Val(), "OK")
		eq(t, e.debug(t, k), want)
		fails(t, e.c.Do(ctx, "CF.COMPACT", e.key("missing")).Err(), "Cuckoo filter was not found")
	})
}

func TestScanType(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		want := map[string]bool{}
		for i := 0; i < 7; i++ {
			k := e.key(fmt.Sprintf("cf%d", i))
			want[k] = true
			ok(t, e.c.CFReserve(ctx, k, 100).Err())
		}
		ok(t, e.c.Set(ctx, e.key("string"), "x", 0).Err())
		eq(t, e.c.Type(ctx, e.key("cf0")).Val(), "MBbloomCF")
		got := map[string]bool{}
		it := e.c.ScanType(ctx, 0, e.key("*"), 2, "MBbloomCF").Iterator()
		for it.Next(ctx) {
			got[it.Val()] = true
		}
		ok(t, it.Err())
		eq(t, got, want)
	})
}

func TestPipelinesAndTransactions(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		for _, tx := range []bool{false, true} {
			k := e.key(fmt.Sprintf("tx%v", tx))
			run := e.c.Pipelined
			if tx {
				run = e.c.TxPipelined
			}
			var (
				add, addnx, exists, del *redis.BoolCmd
				ins                     *redis.BoolSliceCmd
				insnx                   *redis.IntSliceCmd
				count                   *redis.IntCmd
				info                    *redis.CFInfoCmd
				again                   *redis.StatusCmd
			)
			_, err := run(ctx, func(p redis.Pipeliner) error {
				p.CFReserveBucketSize(ctx, k, 1000, 4)
				add = p.CFAdd(ctx, k, "a")
				addnx = p.CFAddNX(ctx, k, "a")
				ins = p.CFInsert(ctx, k, nil, "b", "c")
				insnx = p.CFInsertNX(ctx, k, nil, "c", "d")
				exists = p.CFExists(ctx, k, "d")
				count = p.CFCount(ctx, k, "a")
				del = p.CFDel(ctx, k, "a")
				info = p.CFInfo(ctx, k)
				again = p.CFReserve(ctx, k, 10)
				return nil
			})
			fails(t, err, "ERR item exists") // the first failing command's error
			eq(t, []bool{add.Val(), addnx.Val(), exists.Val(), del.Val()},
				[]bool{true, false, true, true})
			eq(t, ins.Val(), []bool{true, true})
			eq(t, insnx.Val(), []int64{0, 1})
			eq(t, count.Val(), int64(1))
			eq(t, info.Val(), redis.CFInfo{Size: 1080, NumBuckets: 256, NumFilters: 1,
				NumItemsInserted: 3, NumItemsDeleted: 1, BucketSize: 4, ExpansionRate: 1,
				MaxIteration: 20})
			fails(t, again.Err(), "ERR item exists")
		}
	})
}

func TestPoolUnderConcurrency(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		k := e.key("k")
		ok(t, e.c.CFReserve(ctx, k, 10000).Err())
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := map[int]int{}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					added, err := e.c.CFAddNX(ctx, k, fmt.Sprintf("item%d", i)).Result()
					if err != nil {
						t.Errorf("CFAddNX: %v", err)
						return
					}
					if added {
						mu.Lock()
						winners[i]++
						mu.Unlock()
					}
					if err := e.c.CFAdd(ctx, k, fmt.Sprintf("g%d:%d", g, i)).Err(); err != nil {
						t.Errorf("CFAdd: %v", err)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		// at most one goroutine wins each item (none only for a false positive of the filter)
		for i, n := range winners {
			if n != 1 {
				t.Fatalf("item%d added by %d goroutines", i, n)
			}
		}
		if len(winners) <= 90 {
			t.Fatalf("only %d items won", len(winners))
		}
		eq(t, e.c.CFInfo(ctx, k).Val().NumItemsInserted, int64(len(winners)+8*100))
		var items []interface{}
		for i := 0; i < 100; i++ {
			items = append(items, fmt.Sprintf("item%d", i))
		}
		for i, present := range e.c.CFMExists(ctx, k, items...).Val() {
			if !present {
				t.Fatalf("item%d missing", i)
			}
		}
	})
}
