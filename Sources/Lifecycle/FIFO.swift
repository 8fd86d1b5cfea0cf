/// A first-in first-out queue that pops without shifting its array: the
/// head moves, and the storage is reused once empty or compacted once the
/// consumed part is most of it (the HTTP/2 transfer loop and
/// `ThreadExecutor` pop thousands a second).
package struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    package init() {}

    package var isEmpty: Bool { head == items.count }

    package var first: Element? { head < items.count ? items[head] : nil }

    package mutating func append(_ element: Element) { items.append(element) }

    package mutating func popFirst() -> Element? {
        guard let first else { return nil }
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return first
    }
}
