//! The Kubernetes CEL libraries, one test per library, with the examples of the Kubernetes
//! documentation ("CEL in Kubernetes" and the library sources' doc comments). Expectations
//! marked "gator" were also checked against the real gator v3.21.1.

mod common;

use common::{assert_all_true, outcome};

#[test]
fn lists_library() {
    assert_all_true(&[
        "[1, 2, 3].isSorted()",
        "!([3, 2, 1].isSorted())",
        "['a', 'b'].isSorted()",
        "[1, 2, 3].sum() == 6",
        "[1.0, 2.5].sum() == 3.5",
        "[].sum() == 0",
        "[1, 2, 3].min() == 1",
        "[1, 2, 3].max() == 3",
        "['b', 'a'].min() == 'a'",
        "[1, 2, 2, 3].indexOf(2) == 1",
        "[1, 2, 2, 3].lastIndexOf(2) == 2",
        "[1, 2].indexOf(7) == -1",
        "[[1], [2]].indexOf([2]) == 1",
    ]);
    // gator: "max called on empty list"
    assert_eq!(
        outcome("[].max() == 3"),
        Err("expression '[].max() == 3' resulted in error: max called on empty list".into())
    );
}

#[test]
fn regex_library() {
    assert_all_true(&[
        "'abc 123'.find('[0-9]+') == '123'",
        "'abc'.find('[0-9]+') == ''",
        "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
        "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
        "'123 abc 456'.findAll('xyz') == []",
        "'abc'.matches('^[a-z]+$')",
    ]);
    let error = outcome("\"abc\".matches(\"[\")").unwrap_err();
    assert!(
        error.starts_with(
            "compilation error: compilation failed: ERROR: <input>:1:15: invalid matches argument"
        ),
        "{error}"
    );
    let error = outcome("'x'.find('[') == ''").unwrap_err();
    assert!(
        error.starts_with("compilation error: program instantiation failed: error parsing regexp"),
        "{error}"
    );
}

#[test]
fn strings_extension() {
    assert_all_true(&[
        "'hello'.charAt(1) == 'e'",
        "'hello'.charAt(5) == ''",
        "'hello mellow'.indexOf('ello') == 1",
        "'hello mellow'.indexOf('ello', 6) == 7",
        "'hello'.indexOf('') == 0",
        "'hello mellow'.lastIndexOf('ello') == 7",
        "'TacoCat'.lowerAscii() == 'tacocat'",
        "'TacoCat'.upperAscii() == 'TACOCAT'",
        "'hello hello'.replace('he', 'we') == 'wello wello'",
        "'hello hello'.replace('he', 'we', 1) == 'wello hello'",
        "'ab'.replace('', 'x') == 'xaxbx'",
        "'hello hello hello'.split(' ') == ['hello', 'hello', 'hello']",
        "'hello hello hello'.split(' ', 2) == ['hello', 'hello hello']",
        "'a,b,,c'.split(',', -1).size() == 4",
        "'tacocat'.substring(4) == 'cat'",
        "'tacocat'.substring(0, 4) == 'taco'",
        "'  \\ttrim\\n    '.trim() == 'trim'",
        "['hello', 'mellow'].join() == 'hellomellow'",
        "['hello', 'mellow'].join(' ') == 'hello mellow'",
        "strings.quote('single-quote with \"double quote\"') == '\"single-quote with \\\\\"double quote\\\\\"\"'",
        "'%s-%d'.format(['a', 1]) == 'a-1'",
        "'%.2f'.format([1.0]) == '1.00'",
        "'%x'.format([255]) == 'ff'",
        "'%o'.format([8]) == '10'",
        "'%b'.format([5]) == '101'",
        "'%s'.format([null]) == 'null'",
        "'%s'.format([true]) == 'true'",
    ]);
    // gator: index out of range
    assert_eq!(
        outcome("'hello'.substring(1, 9) == 'x'"),
        Err(
            "expression ''hello'.substring(1, 9) == 'x'' resulted in error: index out of range: 9"
                .into()
        )
    );
}

#[test]
fn quantity_library() {
    assert_all_true(&[
        "isQuantity('1.3G')",
        "isQuantity('1.3Gi')",
        "!isQuantity('1,3G')",
        "isQuantity('10000k')",
        "!isQuantity('200K')",
        "!isQuantity('Three')",
        "isQuantity('Mi')", // gator: true, whatever the doc comment says
        "quantity('50000000G').isInteger()",
        "quantity('50k').isInteger()",
        "!quantity('9999999999999999999999999999999999999G').isInteger()",
        "quantity('50k').asInteger() == 50000",
        "quantity('50k').sub(20000).asApproximateFloat() == 30000.0",
        "quantity('50k').add(quantity('20k')) == quantity('70k')",
        "quantity('50k').add(20) == quantity('50020')",
        "quantity('50k').sub(quantity('20k')) == quantity('30k')",
        "quantity('50k').sub(20000) == quantity('30k')",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')",
        "quantity('200M').compareTo(quantity('0.2G')) == 0",
        "quantity('50M').compareTo(quantity('50Mi')) == -1",
        "quantity('50Mi').compareTo(quantity('50M')) == 1",
        "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
        "!quantity('50Mi').isGreaterThan(quantity('100Mi'))",
        "quantity('50M').isLessThan(quantity('100M'))",
        "!quantity('100M').isLessThan(quantity('50M'))",
        "quantity('1Gi') == quantity('1024Mi')",
        "sign(quantity('-5')) == -1",
        "sign(quantity('0')) == 0",
    ]);
    assert_eq!(
        outcome("quantity('9999999999999999999999999999999999999G').asInteger() == 1"),
        Err("expression 'quantity('9999999999999999999999999999999999999G').asInteger() == 1' resulted in error: cannot convert value to integer".into())
    );
    let error = outcome("quantity('x') == quantity('1')").unwrap_err();
    assert!(error.ends_with("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"), "{error}");
}

#[test]
fn url_library() {
    assert_all_true(&[
        "url('https://example.com:80/').getHost() == 'example.com:80'",
        "url('https://example.com/').getScheme() == 'https'",
        "url('https://[::1]:80/').getHostname() == '::1'",
        "url('https://[::1]:80/').getHost() == '[::1]:80'",
        "url('https://example.com:80/').getPort() == '80'",
        "url('https://example.com/').getPort() == ''",
        "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
        "url('https://example.com/?k=a&k=b&j').getQuery() == {'k': ['a', 'b'], 'j': ['']}",
        "url('/abs/path').getScheme() == ''",
        "isURL('https://user:pass@example.com/')",
        "!isURL('relative/path')",
        "!isURL('https://a b')",
    ]);
    // gator: a bare URL is not a boolean validation
    assert_eq!(
        outcome("url('x')"),
        Err("compilation error: must evaluate to bool but got kubernetes.URL".into())
    );
}

#[test]
fn ip_and_cidr_libraries() {
    assert_all_true(&[
        "ip('10.0.0.1').family() == 4",
        "ip('::1').family() == 6",
        "!isIP('::ffff:1.2.3.4')",
        "!isIP('1.2.3.04')",
        "!isIP('fe80::1%eth0')",
        "!ip.isCanonical('2001:db8::0:1')",
        "ip.isCanonical('127.0.0.1')",
        "string(ip('2001:db8::0:1')) == '2001:db8::1'",
        "ip('127.0.0.1') == ip('127.0.0.1')",
        "ip('127.0.0.1').isLoopback()",
        "!ip('224.0.0.1').isLinkLocalMulticast() == false",
        "ip('ff02::1').isLinkLocalMulticast()",
        "ip('169.254.1.1').isLinkLocalUnicast()",
        "ip('0.0.0.0').isUnspecified()",
        "ip('8.8.8.8').isGlobalUnicast()",
        "ip('10.0.0.1').isGlobalUnicast()",
        "cidr('10.0.0.0/8').containsIP('10.1.1.1')",
        "cidr('10.0.0.0/8').containsIP(ip('10.1.1.1'))",
        "!cidr('10.0.0.0/8').containsIP('11.0.0.1')",
        "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')",
        "!cidr('192.168.0.0/25').containsCIDR('192.168.0.0/24')",
        "cidr('192.168.1.5/24').masked() == cidr('192.168.1.0/24')",
        "string(cidr('192.168.1.5/24')) == '192.168.1.5/24'",
        "cidr('192.168.1.5/24').ip() == ip('192.168.1.5')",
        "cidr('192.168.1.5/24').prefixLength() == 24",
        "!isCIDR('192.168.1.5')",
        "isCIDR('::1/128')",
    ]);
    assert_eq!(
        outcome("ip('::ffff:1.2.3.4').family() == 6"),
        Err("expression 'ip('::ffff:1.2.3.4').family() == 6' resulted in error: IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed".into())
    );
}

#[test]
fn format_library() {
    assert_all_true(&[
        "format.dns1123Label().validate('my-name') == optional.none()",
        "format.dns1123Label().validate('ABC').hasValue()",
        "format.dns1123Label().validate('a.b').value() == ['must not contain dots']",
        "format.named('dns1123Subdomain').value().validate('example.com') == optional.none()",
        "!format.named('nope').hasValue()",
        "format.labelValue().validate('') == optional.none()",
        "format.qualifiedName().validate('example.com/MyName') == optional.none()",
        "format.dns1035Label().validate('1abc').hasValue()",
        "format.dns1123LabelPrefix().validate('abc-') == optional.none()",
    ]);
    assert!(
        outcome("format.uri().validate('x').hasValue()")
            .unwrap_err()
            .contains("function 'format.uri'")
    );
}

#[test]
fn sets_extension() {
    assert_all_true(&[
        "sets.contains([1, 2, 3], [2, 3])",
        "!sets.contains([1, 2], [3])",
        "sets.equivalent([1, 2, 2], [2, 1])",
        "sets.intersects([1, 2], [2, 5])",
        "!sets.intersects([1], [])",
    ]);
}

#[test]
fn optional_types() {
    assert_all_true(&[
        "optional.of(1).orValue(2) == 1",
        "optional.none().orValue(2) == 2",
        "object.?spec.?foo.orValue('d') == 'd'",
        "object.?metadata.?name.value() == 'p'",
        "object.metadata.?labels.?app.hasValue()",
        "!object.metadata.?annotations.hasValue()",
        "object.spec.containers[?0].hasValue()",
        "!object.spec.containers[?5].hasValue()",
        "optional.ofNonZeroValue('').orValue('zero') == 'zero'",
        "object.?spec.?containers.optMap(c, c.size()).orValue(0) == 1",
    ]);
}

#[test]
fn lists_extension_and_standard_macros() {
    assert_all_true(&[
        "[1, 2].distinct() == [1, 2]",
        "lists.range(3).size() == 3",
        "[3, 1, 2].sort() == [1, 2, 3]",
        "[[1], [2, 3]].flatten() == [1, 2, 3]",
        "[1, 2, 3, 4].slice(1, 3) == [2, 3]",
        "object.spec.containers.map(c, c.name).join(',') == 'c'",
        "object.spec.containers.all(c, c.image.startsWith('nginx'))",
        "object.spec.containers.exists_one(c, c.name == 'c')",
        "object.spec.containers.filter(c, c.name == 'x').size() == 0",
        "has(object.metadata.labels)",
        "!has(object.metadata.annotations)",
        "type(object) == map",
        "duration('1h') > duration('1m')",
        "variables.params.p == 1",
        "variables.anyObject.metadata.name == 'p'",
    ]);
}

#[test]
fn the_harness_sees_false_and_errors() {
    assert_eq!(outcome("1 == 2"), Ok(false));
    assert_eq!(outcome("[1].exists(x, x == 2)"), Ok(false));
    assert_eq!(
        outcome("object.metadata.missing == 'x'"),
        Err(
            "expression 'object.metadata.missing == 'x'' resulted in error: no such key: missing"
                .into()
        )
    );
}

#[test]
fn comprehensions_absorb_errors_a_later_element_decides() {
    // CEL's commutative logic: an error in one element does not matter when another decides.
    assert_eq!(
        outcome("[object.metadata.name, 0].all(x, x > 0)"),
        Ok(false)
    );
    assert_eq!(
        outcome("[object.metadata.name, 1].exists(x, x > 0)"),
        Ok(true)
    );
    assert!(outcome("[object.metadata.name, 1].all(x, x > 0)").is_err());
}
