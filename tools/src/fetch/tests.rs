use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use super::*;

/// A server on 127.0.0.1 with a few pages; its address.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                let head = |status: &str, extra: &str| {
                    format!("HTTP/1.1 {status}\r\n{extra}connection: close\r\n\r\n")
                };
                let _ = match path.as_str() {
                    "/a" => stream.write_all(
                        head("302 Found", "location: /b\r\ncontent-length: 0\r\n").as_bytes(),
                    ),
                    "/b" => stream.write_all(
                        head(
                            "301 Moved",
                            &format!("location: http://{addr}/docs/page\r\ncontent-length: 0\r\n"),
                        )
                        .as_bytes(),
                    ),
                    "/docs/page" => {
                        let body = "<html><head><title>t</title></head><body><h1>Title</h1><p>Some <b>bold</b> text and <a href=\"/x\">a link</a>.</p><ul><li>one</li></ul></body></html>";
                        stream.write_all(
                            format!("{}{body}", head("200 OK", &format!("content-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n", body.len()))).as_bytes(),
                        )
                    }
                    "/loop" => stream.write_all(
                        head("302 Found", "location: /loop\r\ncontent-length: 0\r\n").as_bytes(),
                    ),
                    "/big" => {
                        let size = 20 * 1024 * 1024;
                        let _ = stream.write_all(
                            head(
                                "200 OK",
                                &format!("content-type: text/plain\r\ncontent-length: {size}\r\n"),
                            )
                            .as_bytes(),
                        );
                        let chunk = vec![b'x'; 64 * 1024];
                        let mut sent = 0;
                        while sent < size {
                            if stream.write_all(&chunk).is_err() {
                                break;
                            }
                            sent += chunk.len();
                        }
                        Ok(())
                    }
                    "/slow" => {
                        let _ = stream.write_all(
                            head(
                                "200 OK",
                                "content-type: text/plain\r\ncontent-length: 100\r\n",
                            )
                            .as_bytes(),
                        );
                        let _ = stream.write_all(b"a little");
                        std::thread::sleep(Duration::from_secs(5));
                        Ok(())
                    }
                    _ => {
                        stream.write_all(head("404 Not Found", "content-length: 0\r\n").as_bytes())
                    }
                };
            });
        }
    });
    format!("http://{addr}")
}

fn loopback(host: &str) -> bool {
    host == "127.0.0.1"
}

fn small() -> Bounds {
    Bounds {
        bytes: 1024 * 1024,
        time: Duration::from_millis(1500),
        redirects: 3,
    }
}

#[test]
fn a_redirect_chain_is_followed_to_markdown() {
    let base = serve();
    let page = fetch(&format!("{base}/a"), small(), &loopback).unwrap();
    assert_eq!(page.url, format!("{base}/docs/page"));
    assert_eq!((page.status, page.redirects, page.cut), (200, 2, false));
    let text = text(&page);
    assert!(
        text.starts_with(&format!(
            "{base}/docs/page (HTTP 200, after 2 redirect(s))\n\n"
        )),
        "{text}"
    );
    assert!(text.contains("# Title"), "{text}");
    assert!(
        text.contains("Some **bold** text and [a link](/x)."),
        "{text}"
    );
    assert!(text.contains("one"), "{text}");
}

#[test]
fn redirects_past_the_bound_are_refused() {
    let base = serve();
    let e = fetch(&format!("{base}/loop"), small(), &loopback).unwrap_err();
    assert!(
        e.ends_with("more than 3 redirects; not followed further"),
        "{e}"
    );
}

#[test]
fn a_20_mb_body_is_cut_at_the_bound() {
    let base = serve();
    let page = fetch(&format!("{base}/big"), small(), &loopback).unwrap();
    assert!(page.cut);
    assert_eq!(page.bytes.len(), 1024 * 1024);
    assert!(text(&page).ends_with("[the page goes on past 1048576 bytes; not read further]\n"));
}

#[test]
fn a_slow_server_is_given_up() {
    let base = serve();
    let started = Instant::now();
    let e = fetch(&format!("{base}/slow"), small(), &loopback).unwrap_err();
    assert!(e.ends_with("no whole page within 1 s; given up"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_private_address_needs_a_rule_and_only_http_is_fetched() {
    let base = serve();
    let e = fetch(&format!("{base}/docs/page"), small(), &|_| false).unwrap_err();
    assert!(
        e.starts_with(
            "127.0.0.1 resolves to 127.0.0.1 (loopback): refused; a permission rule naming it"
        ),
        "{e}"
    );
    let e = fetch("http://localhost:9/", small(), &|_| false).unwrap_err();
    assert!(e.contains("(loopback): refused"), "{e}");
    let e = fetch("file:///etc/passwd", small(), &|_| true).unwrap_err();
    assert!(e.contains("only http and https"), "{e}");
}

#[test]
fn a_redirect_to_another_host_is_not_followed() {
    // localhost is named by a rule; the redirect's target, 127.0.0.1, is
    // another host (a private one, too): not reached, the new URL told.
    let base = serve();
    let port = base.rsplit(':').next().unwrap();
    let e = fetch(&format!("http://localhost:{port}/a"), small(), &|h| {
        h == "localhost"
    })
    .unwrap_err();
    assert!(
        e.contains(&format!(
            "redirects to http://127.0.0.1:{port}/docs/page, on another host: not followed"
        )),
        "{e}"
    );
}

#[test]
fn locations_are_joined_to_where_they_came_from() {
    assert_eq!(joined("https://a.b/c/d?q", "/e"), "https://a.b/e");
    assert_eq!(joined("https://a.b/c/d", "e"), "https://a.b/c/e");
    assert_eq!(joined("https://a.b/c/d", "//x.y/z"), "https://x.y/z");
    assert_eq!(joined("https://a.b/c", "http://x.y/"), "http://x.y/");
}
