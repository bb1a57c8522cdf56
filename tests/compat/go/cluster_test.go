// cuckood's cluster mode through go-redis v9's ClusterClient, in RESP2 and RESP3: a small CF
// workload over ~100 keys (hash tags included) that the client routes by CLUSTER SLOTS and
// COMMAND. Run by scripts/compat.sh go, which starts 3 cluster-enabled nodes, pushes their
// topology and names them in CUCKOOD_CLUSTER_NODES ("host:port,host:port,host:port").
package compat

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func clusterAddrs(t *testing.T) []string {
	nodes := os.Getenv("CUCKOOD_CLUSTER_NODES")
	if nodes == "" {
		t.Fatal("CUCKOOD_CLUSTER_NODES must name the cluster started by scripts/compat.sh")
	}
	return strings.Split(nodes, ",")
}

// owners maps every slot to the address of its master, as CLUSTER SLOTS of one node says.
func owners(t *testing.T, seed string) map[int64]string {
	c := redis.NewClient(&redis.Options{Addr: seed})
	defer c.Close()
	slots, err := c.ClusterSlots(ctx).Result()
	ok(t, err)
	m := map[int64]string{}
	for _, s := range slots {
		for slot := s.Start; slot <= s.End; slot++ {
			m[int64(slot)] = s.Nodes[0].Addr
		}
	}
	eq(t, len(m), 16384)
	return m
}

func TestClusterClientCF(t *testing.T) {
	addrs := clusterAddrs(t)
	owner := owners(t, addrs[0])
	direct := map[string]*redis.Client{}
	for _, a := range addrs {
		direct[a] = redis.NewClient(&redis.Options{Addr: a})
		defer direct[a].Close()
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: proto,
				ReadTimeout: 30 * time.Second})
			defer rc.Close()
			var keys []string
			for i := 0; i < 80; i++ {
				keys = append(keys, fmt.Sprintf("gocl:%d:%d", proto, i))
			}
			for i := 0; i < 20; i++ {
				keys = append(keys, fmt.Sprintf("{gocl%d}:%d", proto, i))
			}
			eq(t, rc.CFReserve(ctx, keys[0], 1000).Val(), "OK")
			for i, k := range keys {
				added, err := rc.CFAdd(ctx, k, fmt.Sprintf("item-%d", i)).Result()
				ok(t, err)
				eq(t, added, true)
			}
			got, err := rc.CFInsert(ctx, keys[80], nil, "x", "y").Result()
			ok(t, err)
			eq(t, got, []bool{true, true})
			for i, k := range keys {
				found, err := rc.CFExists(ctx, k, fmt.Sprintf("item-%d", i)).Result()
				ok(t, err)
				eq(t, found, true)
			}
			eq(t, rc.CFExists(ctx, keys[1], "absent").Val(), false)
			info, err := rc.CFInfo(ctx, keys[80]).Result()
			ok(t, err)
			eq(t, info.NumItemsInserted, int64(3))
			info, err = rc.CFInfo(ctx, keys[0]).Result()
			ok(t, err)
			eq(t, info, redis.CFInfo{Size: 1080, NumBuckets: 512, NumFilters: 1,
				NumItemsInserted: 1, BucketSize: 2, ExpansionRate: 1, MaxIteration: 20})
			// A hash-tagged pipeline goes to one node in one round trip.
			pipe := rc.Pipeline()
			adds := []*redis.BoolCmd{}
			for i := 81; i < 100; i++ {
				adds = append(adds, pipe.CFAdd(ctx, keys[i], "piped"))
			}
			_, err = pipe.Exec(ctx)
			ok(t, err)
			for _, c := range adds {
				eq(t, c.Val(), true)
			}
			// Every key is on the master that owns its slot; the others redirect.
			used := map[string]int{}
			for _, k := range keys {
				slot, err := rc.ClusterKeySlot(ctx, k).Result()
				ok(t, err)
				home := owner[slot]
				used[home]++
				eq(t, direct[home].Exists(ctx, k).Val(), int64(1))
				for a, c := range direct {
					if a != home {
						err := c.Exists(ctx, k).Err()
						if err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
							t.Fatalf("%s on %s: want MOVED, got %v", k, a, err)
						}
					}
				}
			}
			eq(t, len(used), 3)
			fails(t, rc.Do(ctx, "DEL", "{a}x", "{b}x").Err(),
				"CROSSSLOT Keys in request don't hash to the same slot")
		})
	}
}
