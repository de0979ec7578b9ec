# octokit.rb as its README writes it, given only the API's base URL and a token (GITHUB_API_URL,
# GITHUB_TOKEN): create issues, list them with auto_paginate (it follows Link), follow the answers'
# *_url fields (Sawyer's rels), the older refs route (`ref`), and catch Octokit::NotFound.
# Prints what it saw as JSON for test/twins/github-clients.test.ts.
require 'json'
require 'octokit'

client = Octokit::Client.new(
  access_token: ENV.fetch('GITHUB_TOKEN'),
  api_endpoint: ENV.fetch('GITHUB_API_URL'),
  per_page: 2,
  auto_paginate: true
)
login = client.user.login
repo = client.create_repository(ARGV.fetch(0), auto_init: true)
full_name = repo.full_name
(1..5).each { |n| client.create_issue(full_name, "Ruby issue #{n}", 'made by octokit.rb') }
client.add_comment(full_name, 1, "a comment through the issue's comments_url")
issues = client.list_issues(full_name, state: 'all')
# auto_paginate followed `next` to the last page, which links back to the one before it.
last_page_prev = client.last_response.rels[:prev]&.href
first = issues.find { |i| i.number == 1 }
missing =
  begin
    client.repository("#{login}/no-such-repository")
    nil
  rescue Octokit::NotFound => e
    e.response_status
  end
puts JSON.generate(
  login: login,
  repo_url: repo.url,
  issues: issues.map(&:title),
  last_page_prev: last_page_prev,
  self_full_name: repo.rels[:self].get.data.full_name,
  comments: first.rels[:comments].get.data.map(&:body),
  labels: client.labels(full_name).map(&:name).sort,
  main_ref: client.ref(full_name, 'heads/main').ref,
  missing_status: missing
)
