package trace

// PrefixCache is one worker's prefix cache over trace hash blocks: a least-recently-used set of
// block ids bounded by the worker's KV capacity in blocks. A request's cached prefix is the
// longest run of its leading hash ids present in the cache (the ids are chained: block i's id
// identifies the whole prompt up to block i, as vLLM's block hashes do).
type PrefixCache struct {
	capacity int
	index    map[int64]int32
	// nodes is a doubly linked list in a slice, most recently used at head; free slots are
	// reused after eviction, so the cache allocates only up to its capacity.
	nodes      []node
	head, tail int32
}

type node struct {
	key        int64
	prev, next int32
}

const nilNode = -1

// NewPrefixCache returns a cache holding at most capacity blocks (none when capacity <= 0).
func NewPrefixCache(capacity int) *PrefixCache {
	return &PrefixCache{capacity: max(0, capacity), index: map[int64]int32{}, head: nilNode, tail: nilNode}
}

// Capacity is the cache's size in blocks.
func (c *PrefixCache) Capacity() int { return c.capacity }

// Len is the number of cached blocks.
func (c *PrefixCache) Len() int { return len(c.index) }

// Match returns how many leading ids of hashes are cached and marks them recently used.
func (c *PrefixCache) Match(hashes []int64) int {
	for i, h := range hashes {
		n, ok := c.index[h]
		if !ok {
			return i
		}
		c.moveToFront(n)
	}
	return len(hashes)
}

// Insert caches every id of hashes (a computed prompt), evicting the least recently used
// blocks beyond the capacity.
func (c *PrefixCache) Insert(hashes []int64) {
	if c.capacity == 0 {
		return
	}
	for _, h := range hashes {
		if n, ok := c.index[h]; ok {
			c.moveToFront(n)
			continue
		}
		var n int32
		if len(c.index) >= c.capacity {
			n = c.tail
			c.unlink(n)
			delete(c.index, c.nodes[n].key)
		} else {
			c.nodes = append(c.nodes, node{})
			n = int32(len(c.nodes) - 1)
		}
		c.nodes[n].key = h
		c.index[h] = n
		c.pushFront(n)
	}
}

func (c *PrefixCache) moveToFront(n int32) {
	if c.head == n {
		return
	}
	c.unlink(n)
	c.pushFront(n)
}

func (c *PrefixCache) unlink(n int32) {
	nd := &c.nodes[n]
	if nd.prev != nilNode {
		c.nodes[nd.prev].next = nd.next
	} else {
		c.head = nd.next
	}
	if nd.next != nilNode {
		c.nodes[nd.next].prev = nd.prev
	} else {
		c.tail = nd.prev
	}
	nd.prev, nd.next = nilNode, nilNode
}

func (c *PrefixCache) pushFront(n int32) {
	nd := &c.nodes[n]
	nd.prev, nd.next = nilNode, c.head
	if c.head != nilNode {
		c.nodes[c.head].prev = n
	}
	c.head = n
	if c.tail == nilNode {
		c.tail = n
	}
}
