/// A first-in first-out queue that pops without shifting its array: the
/// head moves, and the storage is reused once empty or compacted once the
/// consumed part is most of it (the transfer loop pops thousands a second).
struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    var first: Element? { head < items.count ? items[head] : nil }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
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
