package extract

// oddShapes seed the fuzzers with every shape the decoders know, and broken
// ones.
var oddShapes = []string{
	commsCanonical,
	`{"data":{"rows":[],"total":0,"per_page":20,"current_page":1,"last_page":0}}`,
	`{"data":{"rows":{},"total":0}}`,
	`{"data":{"rows":[{"id":5,"email":{"has_attachments":true},"users":{"from":{"1":{"email":"a@b"}},"to":[{"email":"c@d"}],"cc":{},"bcc":null}}]}}`,
	`{"data":{"rows":{"1":{"email":{"email_at":"2024-03-01T10:15:30.123456Z","size":"12"},"users":{"to":{"ana@x.example":{"email":"ana@x.example"}}}}}}}`,
	`{"data":{"rows":{"99999999999999999999":{"email":{},"users":{}}}}}`,
	`{"data":{"rows":{"1":{"email":{},"users":{"to":{"99999999999999999999":{}}}}}}}`,
	`[{"brand_info":{"id":"1","financial_summary":{"total_budget":"1e3"}}}]`,
	`{"data":[{"id":1}],"meta":{"pagination":{"total":"3","per_page":1,"current_page":1}}}`,
	`{"data":[{"id":1}],"pagination":{"total":3,"last_page":3}}`,
	`{"data":{"1":{"project_info":{"id":1,"team":{"5":{"role":"x"}},"history":[{"from":{"a":1},"to":[1]}]}}}}`,
	`{"data":{}}`, `{}`, `[]`, `null`, `"x"`, `42`, ``, ` `, `<html>`, `{"error":{"message":"Daily quota exceeded"}}`,
	`{"error":"x","data":[]}`, `{"data":{"rows":"x"}}`, `{"data":{"items":[]}}`,
	`[{"id":1.5},{"id":true},{"id":{}},{"id":[]},{"amount":"1,5"},{"amount":"-"},null,1,"s",[]]`,
	`[{"name":"\u00e9\ud83d\ude00\ud800\"\\\/\b\f\n\r\t"}]`,
	"\xEF\xBB\xBF[{\"id\":\"1\"}]",
	`{"data":[{"id":1},`, `{"data":{"rows":{"1":{"email":{"subject":"x`, `[1,]`, `[01]`, `[-]`, `[1e]`, `["\x"]`, `["\u12"]`,
	`{"data":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`[{"date_created":"2024-02-30","projects_count":"9223372036854775808"}]`,
	`[{"brand_info":{"brand_info":{"brand_info":{"brand_info":{"brand_info":{"id":1}}}}}}]`,
}

// commsCanonical is a communications page in the canonical shape: rows keyed
// by record id, recipients as [] or keyed by platform user id, from as an
// array or an object.
const commsCanonical = `{"data":{"rows":{
 "101":{"email":{"type_id":1,"type_name":"Email","brand_id":"12","project_id":null,"subject":"Hello","message":null,"has_attachments":1,"size":2048,"mailbox_id":"m1","mailbox_thread":"t1","email_at":"2024-03-01T10:15:30.123456Z"},
        "users":{"from":[{"first_name":"Ana","last_name":null,"full_name":"Ana ","email":"Ana@Ext.example","phone":"","avatar":"https://x/blank.png","status":"Activ"}],
                 "to":{"7":{"first_name":"Dan","last_name":"Pop","full_name":"Dan Pop","email":"dan@a.example","phone":null,"avatar":"https://x/blank.png","status":"Activ"}},
                 "cc":[],"bcc":[]}},
 "102":{"email":{"type_id":null,"type_name":null,"brand_id":13,"project_id":"9","subject":"Re","message":"body","has_attachments":null,"size":10,"mailbox_id":"m2","mailbox_thread":"t1","email_at":"2024-03-02T00:00:00.000000Z"},
        "users":{"from":{"first_name":"Dan","last_name":"Pop","full_name":"Dan Pop","email":"dan@a.example","phone":null,"avatar":"a","status":"Activ"},
                 "to":[{"first_name":"Ana","last_name":null,"full_name":"Ana ","email":"ana@ext.example","phone":"","avatar":"a","status":"Activ"}],
                 "cc":{"8":{"first_name":"Eve","last_name":"X","full_name":"Eve X","email":"eve@a.example","phone":"123","avatar":"a","status":"Activ"},"9":{"first_name":"Ion","last_name":"Y","full_name":"Ion Y","email":"ion@a.example","phone":null,"avatar":"a","status":"Activ"}},
                 "bcc":{}}}
},"total":2,"per_page":20,"current_page":1,"last_page":1}}`
