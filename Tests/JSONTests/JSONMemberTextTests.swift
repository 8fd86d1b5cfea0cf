import JSON
import Testing

@Suite struct JSONMemberTextTests {
    private func compact(_ text: String, _ name: String = "payload") -> String? {
        JSONMemberText.compact(name, in: Array(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func keepsMemberOrderAndDropsWhitespaceOutsideStrings() {
        let body = #"{"target": {"userId": "a"}, "payload" : { "z": 1, "aps" : {"alert": "a  b\" }"} , "list": [ 1, 2 ] } , "x": 2}"#
        #expect(compact(body) == #"{"z":1,"aps":{"alert":"a  b\" }"},"list":[1,2]}"#)
    }

    @Test func scalarsLastMemberAndAbsence() {
        #expect(compact(#"{"payload": 12 }"#) == "12")
        #expect(compact(#"{"payload": "a b", "payload": {"k": true}}"#) == #"{"k":true}"#)
        #expect(compact(#"{"other": {"payload": 1}}"#) == nil)
        #expect(compact(#"{"pay\u006coad": [ ]}"#) == "[]")
        #expect(compact(#"{"a":"payload","payload":null}"#) == "null")
    }
}
