"""PyGithub as its README writes it, given only the API's base URL and a token (GITHUB_API_URL,
GITHUB_TOKEN): create issues, list them page by page, follow the answers' url fields, catch a 404.
Prints what it saw as JSON for test/twins/github-clients.test.ts."""
import json
import os
import sys

from github import Github, UnknownObjectException

g = Github(base_url=os.environ["GITHUB_API_URL"], login_or_token=os.environ["GITHUB_TOKEN"], per_page=2)
user = g.get_user()
login = user.login
# PyGithub 1.55 makes every later call through the repository's `url` field.
repo = user.create_repo(sys.argv[1], auto_init=True)
for n in range(1, 6):
    repo.create_issue(title=f"Python issue {n}", body="made by PyGithub")
issue = repo.get_issue(1)
issue.create_comment("a comment through the issue's url")
issue.edit(state="closed")
try:
    g.get_repo(f"{login}/no-such-repository")
    missing = None
except UnknownObjectException as error:
    missing = error.status
print(
    json.dumps(
        {
            "login": login,
            "repo_url": repo.url,
            "issues": [i.title for i in repo.get_issues(state="all")],
            "first_page": len(repo.get_issues(state="all").get_page(0)),
            "open": [i.number for i in repo.get_issues(state="open")],
            "comments": [c.body for c in issue.get_comments()],
            "labels": sorted(label.name for label in repo.get_labels()),
            "main_ref": repo.get_git_ref("heads/main").ref,
            "missing_status": missing,
        }
    )
)
